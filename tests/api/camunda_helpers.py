"""Helpers of the Camunda REST tests: error checks and starting the review model."""

from __future__ import annotations

from typing import Any

import httpx

from tests.api.conftest import Api
from tests.camunda_models import CHARGE, REVIEW


def assert_error(res: httpx.Response, status: int, kind: str, fragment: str = "") -> None:
    """A Camunda error answer: status, exact content type, type and message."""
    assert res.status_code == status, res.text
    assert res.headers["content-type"] == "application/json"
    body = res.json()
    assert body["type"] == kind and fragment in body["message"], body
    assert set(body) >= {"type", "message", "code"}


def review(api: Api, n: int = 3) -> list[str]:
    """Deploy the review and charge models and start ``n`` reviews (o-0, o-1...)."""
    api.deploy(REVIEW, "review.bpmn")
    api.deploy(CHARGE, "charge.bpmn")
    out = []
    for i in range(n):
        body = {
            "businessKey": f"o-{i}",
            "variables": {
                "reviewers": {"value": '["ann","bob"]', "type": "Json"},
                "amount": {"value": 100 * (i + 1), "type": "Integer"},
            },
        }
        r = api.http.post("/process-definition/key/review/start", json=body)
        assert r.status_code == 200, r.text
        out.append(str(r.json()["id"]))
    return out


def task_of(api: Api, instance_id: str) -> dict[str, Any]:
    res = api.http.get("/task", params={"processInstanceId": instance_id})
    assert res.status_code == 200, res.text
    (task,) = res.json()
    return dict(task)
