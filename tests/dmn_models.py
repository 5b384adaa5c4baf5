"""Small DMN 1.5 documents for the DMN tests, built from parts."""

from __future__ import annotations

from xml.sax.saxutils import escape

NS = "https://www.omg.org/spec/DMN/20230324/MODEL/"
_END_INFO = "</informationRequirement>"
_END_KNOW = "</knowledgeRequirement>"


def definitions(body: str, name: str = "test", namespace: str = "urn:test") -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<definitions xmlns="{NS}" id="defs" '
        f'name="{name}" namespace="{namespace}">\n{body}\n</definitions>'
    )


def input_data(name: str, type_ref: str | None = None) -> str:
    typed = f' typeRef="{type_ref}"' if type_ref else ""
    ident = name.replace(" ", "_")
    return f'<inputData id="i_{ident}" name="{name}"><variable name="{name}"{typed}/></inputData>'


def requires(*refs: str) -> str:
    """``requires("i_Age", "d_Risk", "b_Fee")``: requirements by id, kind from the prefix."""
    parts = []
    for ref in refs:
        if ref.startswith("i_"):
            parts.append(
                f'<informationRequirement><requiredInput href="#{ref}"/></informationRequirement>'
            )
        elif ref.startswith("d_"):
            parts.append(f'<informationRequirement><requiredDecision href="#{ref}"/>{_END_INFO}')
        else:
            parts.append(
                f'<knowledgeRequirement><requiredKnowledge href="#{ref}"/></knowledgeRequirement>'
            )
    return "".join(parts)


def decision(name: str, logic: str, *refs: str, type_ref: str | None = None) -> str:
    typed = f' typeRef="{type_ref}"' if type_ref else ""
    ident = name.replace(" ", "_")
    return (
        f'<decision id="d_{ident}" name="{name}"><variable name="{name}"{typed}/>'
        f"{requires(*refs)}{logic}</decision>"
    )


def literal(text: str) -> str:
    return f"<literalExpression><text>{escape(text)}</text></literalExpression>"


def table(
    inputs: list[str],
    outputs: list[str],
    rules: list[tuple[list[str], list[str]]],
    hit_policy: str = "UNIQUE",
    aggregation: str | None = None,
    output_values: list[str] | None = None,
    defaults: list[str] | None = None,
    input_values: list[str | None] | None = None,
) -> str:
    agg = f' aggregation="{aggregation}"' if aggregation else ""
    xml = [f'<decisionTable id="table" hitPolicy="{hit_policy}"{agg}>']
    for i, expr in enumerate(inputs):
        allowed = (input_values or [None] * len(inputs))[i]
        values = f"<inputValues><text>{escape(allowed)}</text></inputValues>" if allowed else ""
        expression = f"<inputExpression><text>{escape(expr)}</text></inputExpression>"
        xml.append(f'<input id="in{i}">{expression}{values}</input>')
    for i, name in enumerate(outputs):
        values = ""
        if output_values and output_values[i]:
            values = f"<outputValues><text>{escape(output_values[i])}</text></outputValues>"
        default = ""
        if defaults and defaults[i]:
            default = f"<defaultOutputEntry><text>{escape(defaults[i])}</text></defaultOutputEntry>"
        named = f' name="{name}"' if name else ""
        xml.append(f'<output id="out{i}"{named}>{values}{default}</output>')
    for n, (entries, results) in enumerate(rules):
        xml.append(f'<rule id="r{n + 1}">')
        xml.extend(f"<inputEntry><text>{escape(e)}</text></inputEntry>" for e in entries)
        xml.extend(f"<outputEntry><text>{escape(r)}</text></outputEntry>" for r in results)
        xml.append("</rule>")
    xml.append("</decisionTable>")
    return "".join(xml)


def bkm(name: str, params: list[tuple[str, str | None]], body: str, *refs: str) -> str:
    formal = "".join(
        f'<formalParameter name="{p}"' + (f' typeRef="{t}"' if t else "") + "/>" for p, t in params
    )
    ident = name.replace(" ", "_")
    return (
        f'<businessKnowledgeModel id="b_{ident}" name="{name}"><variable name="{name}"/>'
        f"{requires(*refs)}<encapsulatedLogic>{formal}{body}</encapsulatedLogic>"
        "</businessKnowledgeModel>"
    )
