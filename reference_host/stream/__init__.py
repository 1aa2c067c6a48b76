"""The chat stream: its events and their SSE encoding (events), and a spec-exact parser of
`text/event-stream` for clients and tests (sse_parser)."""
