"""The adapter API: `POST /api/v1/reply` — "the adapter treats the AI module as a single
async call", over HTTP, so a Discord or Slack bot can live outside Clarion.

Token-authenticated (`Authorization: Bearer <token>` from `manage.py create_adapter_token`), so
exempt from the login requirement and from CSRF, which protect cookie sessions only.
"""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import ValidationError

from knowledge import selectors, services
from knowledge.schemas import ReplyRequest
from knowledge.views import bearer_token


def _error(status: int, message: str, *, field: str | None = None, errors: list[dict] | None = None) -> JsonResponse:
    body: dict = {"error": message, "field": field}
    if errors is not None:
        body["errors"] = errors
    response = JsonResponse(body, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="clarion"'
    return response


@csrf_exempt
@login_not_required
async def reply(request: HttpRequest) -> JsonResponse:
    if request.method != "POST":
        response = _error(405, "Use POST.")
        response["Allow"] = "POST"
        return response
    token = await selectors.aactive_adapter_token(raw_token=bearer_token(request))
    if token is None:
        return _error(401, "Missing or invalid token: send Authorization: Bearer <token>.")
    try:
        payload = json.loads(request.body or b"")
    except (ValueError, UnicodeDecodeError) as exc:
        return _error(400, f"The body is not valid JSON ({exc}).", field="(body)")
    try:
        body = ReplyRequest.model_validate(payload)
    except ValidationError as exc:
        errors = [{"field": _field(e["loc"]), "message": e["msg"]} for e in exc.errors(include_url=False, include_input=False)]
        first = errors[0]
        return _error(400, f"{first['field']}: {first['message']}", field=first["field"], errors=errors)
    await services.arecord_adapter_token_use(token=token)
    result = await services.generate_reply(conversation=body.conversation, context=body.context)
    # A bot's users have no Clarion session: citations open their section through signed links.
    result = await sync_to_async(services.with_shared_links)(result=result, request_base=request.build_absolute_uri("/"))
    return JsonResponse(result.model_dump(mode="json"))


def _field(loc: tuple) -> str:
    return ".".join(str(part) for part in loc) or "(body)"
