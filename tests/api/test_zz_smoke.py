from tests.api.conftest import one_task
import time
def test_smoke(api):
    t0=time.time()
    d = api.deploy(one_task("pay", "charge"))
    print(d)
    iid = api.start("pay", {"amount": 42}, "o-1")
    tasks = api.fetch("w1", "charge")
    print(tasks)
    r = api.post(tasks[0]["id"], "complete", {"workerId": "w1", "variables": {"ok": {"value": True}}})
    assert r.status_code == 204, r.text
    print(api.http.get(f"/process-instance/{iid}").json())
