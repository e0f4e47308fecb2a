"""A check that narrows what schemathesis.toml allows.

On the operations where a request the document allows may be refused for a constraint
between parameters (schemathesis.toml lists them, and why), the refusal must name such a
constraint. A refusal that one parameter's own schema could have prevented (a count out of
range, an unknown format, encoding, layout or zone, a bad business code, tick, time or
template) means the document allows what the server refuses: that is a failure on every
operation.
"""

import re

import schemathesis

# The server's words when one parameter, on its own, is out of what it reads.
ONE_PARAMETER = [
    r"^count ",
    r'^query parameter "count" is required',
    r"^unknown format ",
    r"^unknown layout ",
    r"^layout ",
    r"^custom layout ",
    r"^time zone ",
    r"^business code ",
    r"^tick length ",
    r"^tick_ms ",
    r'^(datacenter|worker|sequence) ".*" is not a whole number',
    r"^unknown query parameter ",
    r" is given more than once$",
    r"^unknown encoding ",
    r'^time ".*" (is neither|is before the Unix epoch|is after 9999-12-31)',
    r"^template (has|is|makes) ",
    r"^unknown field ",
    r"^unknown check digit ",
    r"^field \w+ (appears twice|takes no option|has width|is \d+ digits wide|comes (before|after) )",
]


@schemathesis.check
def refusals_name_what_the_document_cannot_say(ctx, response, case):
    """A request the document allows is never refused for one parameter alone."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    try:
        error = response.json().get("error", "")
    except Exception:
        error = response.text
    for pattern in ONE_PARAMETER:
        if re.search(pattern, error):
            raise AssertionError(
                f"a request the document allows was refused for one parameter: {error}"
            )
    return None
