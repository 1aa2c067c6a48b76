"""The pattern of ids a client chooses and the host puts into a response header or a path.

Why: a conversation id is echoed in `X-Conversation-Id`; a non-Latin-1 character made that a
500, and CR, LF or NUL made the server drop the connection (and could split the header). The
pattern is checked in the request model, so a bad id is a 400 and the OpenAPI document shows
the rule. It admits what the host itself makes (`conv_<uuid>`) and common id shapes (UUIDs,
`a.b:c-d`), nothing that needs quoting in a header or a URL path.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
ID_RULE = "1 to 128 characters: ASCII letters, digits, '_', '.', ':' and '-'"

ClientId = Annotated[str, Field(pattern=ID_PATTERN, description=f"An id of {ID_RULE}.")]
