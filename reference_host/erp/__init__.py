"""ERP plugins in the host (spec: erp.md): tool files as REST-backed tools (rest_tools), the
one HTTP request a call becomes (dispatch), and who may call which tool (actors)."""
