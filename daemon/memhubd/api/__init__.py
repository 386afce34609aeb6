"""The JSON API: Starlette routes that adapt HTTP to `memhubd.service`.

Routes parse input, call one service function and shape the response;
authentication, limits, logging and metrics live in the middleware.
"""

from memhubd.api.app import ApiContext, build_app

__all__ = ["ApiContext", "build_app"]
