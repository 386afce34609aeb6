"""JSON API handler of recall -> governed memory: propose a declaration from a drawer.

Parses its input and calls `service.recall_review`; the proposal is then reviewed
through the ordinary proposal routes.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memhubd.api.app import ApiContext, Handler, _json_body
from memhubd.auth.identity import Identity
from memhubd.service import recall_review

# Recorded as the proposal's `client`, as the other doors record theirs.
API_CLIENT = "api"


def recall_review_handlers(context: ApiContext) -> dict[str, Handler]:
    hub = context.hub

    async def propose(request: Request, identity: Identity) -> Response:
        name = str(request.path_params["workspace"])
        drawer_id = str(request.path_params["drawer_id"])
        recall_review.propose_allowed(hub, identity, name)  # before the body is read
        body = recall_review.DrawerProposal.from_json(await _json_body(request))
        data = await recall_review.propose_from_drawer(
            hub, identity, name, drawer_id, body, API_CLIENT
        )
        return JSONResponse(data, status_code=201)

    return {"recall_propose": propose}
