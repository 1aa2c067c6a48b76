"""What a route needs from its app, as FastAPI dependencies: every router reads the Host,
the canvas, the chat model factory and the keep-alive from `app.state` (create_app sets
them), so routers are plain module-level APIRouters with no factory around them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request

from reference_host.agent.models import ChatModel
from reference_host.host import Host
from reference_host.workflow.canvas import Canvas


def current_host(request: Request) -> Host:
    host: Host = request.app.state.host
    return host


def current_canvas(request: Request) -> Canvas:
    canvas: Canvas = request.app.state.canvas
    return canvas


def current_model_factory(request: Request) -> Callable[[], ChatModel]:
    factory: Callable[[], ChatModel] = request.app.state.model_factory
    return factory


def current_keep_alive(request: Request) -> float:
    seconds: float = request.app.state.keep_alive
    return seconds


HostDep = Annotated[Host, Depends(current_host)]
CanvasDep = Annotated[Canvas, Depends(current_canvas)]
ModelFactoryDep = Annotated[Callable[[], ChatModel], Depends(current_model_factory)]
KeepAliveDep = Annotated[float, Depends(current_keep_alive)]
