"""The adapter API: `POST /api/v1/reply` — "the adapter treats the AI module as a single
async call", over HTTP, so a Discord or Slack bot can live outside Clarion.

Token-authenticated (`Authorization: Bearer <token>` from `manage.py create_adapter_token`), so
exempt from the login requirement and from CSRF, which protect cookie sessions only. Every error
under /api/ is JSON of one shape, `{"error": {"code", "message", "field", "errors"?}}`
(docs/user-guide/knowledge-base.md): the view's own, and Django's (404, 500, ...)
through JsonErrorsMiddleware.
"""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.utils.deprecation import MiddlewareMixin
from django.views.decorators.csrf import csrf_exempt
from pydantic import ValidationError

from knowledge import selectors, services
from knowledge.schemas import ReplyRequest
from knowledge.views import bearer_token
from project import throttle

API_PREFIX = "/api/"

# One machine-readable code per status an adapter can meet.
CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    429: "too_many_attempts",
    500: "server_error",
}
# What Django's own error pages say, as one line for an adapter's log.
DEFAULT_MESSAGES = {
    400: "Bad request.",
    403: "Forbidden.",
    404: "No such endpoint: the adapter API is POST /api/v1/reply.",
    405: "Method not allowed.",
    429: "Too many failed attempts from this address: wait the Retry-After seconds before trying again.",
    500: "Clarion failed while answering; the details are in its log.",
}


def error_response(status: int, message: str, *, field: str | None = None, errors: list[dict] | None = None) -> JsonResponse:
    error: dict = {"code": CODES.get(status, "bad_request" if status < 500 else "server_error"), "message": message, "field": field}
    if errors is not None:
        error["errors"] = errors
    response = JsonResponse({"error": error}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="clarion"'
    return response


class JsonErrorsMiddleware(MiddlewareMixin):
    """Under /api/, an error response that is not JSON already (Django's 404, 500, 400 pages) is
    replaced by the API's JSON error with the same status: an adapter never parses HTML."""

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if not request.path.startswith(API_PREFIX) or response.status_code < 400 or response.get("Content-Type") == "application/json":
            return response
        status = response.status_code
        replaced = error_response(status, DEFAULT_MESSAGES.get(status, response.reason_phrase or "Error."))
        for header in ("Allow", "Retry-After"):
            if header in response:
                replaced[header] = response[header]
        return replaced


@csrf_exempt
@login_not_required
async def reply(request: HttpRequest) -> JsonResponse:
    if request.method != "POST":
        response = error_response(405, "Use POST.")
        response["Allow"] = "POST"
        return response
    if request.META.get("QUERY_STRING"):
        # A token in the URL ends up in proxies' and browsers' histories: refused, and never read.
        return error_response(
            400, "This endpoint takes no query parameters; send the token only as Authorization: Bearer <token>.", field="(query)"
        )
    if await sync_to_async(throttle.adapter_client_locked_out)(request):
        response = error_response(
            429, f"Too many invalid tokens from this address; try again in {throttle.retry_after_seconds(request)} seconds."
        )
        response["Retry-After"] = str(throttle.retry_after_seconds(request))
        return response
    raw_body = _body_within_limit(request)
    if raw_body is None:
        return error_response(413, f"The body is larger than the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.", field="(body)")
    token = await selectors.aactive_adapter_token(raw_token=bearer_token(request))
    if token is None:
        await sync_to_async(throttle.record_failed_adapter_attempt)(request)
        return error_response(401, "Missing or invalid token: send Authorization: Bearer <token>.")
    try:
        payload = json.loads(raw_body or b"")
    except RecursionError:
        return error_response(400, "The body is nested too deeply to be a reply request.", field="(body)")
    except (ValueError, UnicodeDecodeError) as exc:
        return error_response(400, f"The body is not valid JSON ({exc}).", field="(body)")
    try:
        body = ReplyRequest.model_validate(payload)
    except RecursionError:
        return error_response(400, "The body is nested too deeply to be a reply request.", field="(body)")
    except ValidationError as exc:
        errors = [{"field": _field(e["loc"]), "message": e["msg"]} for e in exc.errors(include_url=False, include_input=False)]
        first = errors[0]
        return error_response(400, f"{first['field']}: {first['message']}", field=first["field"], errors=errors)
    await services.arecord_adapter_token_use(token=token)
    result = await services.generate_reply(conversation=body.conversation, context=body.context)
    # A bot's users have no Clarion session: citations open their section through signed links.
    result = await sync_to_async(services.with_shared_links)(result=result, request_base=request.build_absolute_uri("/"))
    # The closest pages are the chat's: their links need a session, and an adapter does nothing
    # with a result it should not reply with.
    return JsonResponse(result.model_dump(mode="json", exclude={"closest_pages"}))


def _body_within_limit(request: HttpRequest) -> bytes | None:
    """The body, or None past DATA_UPLOAD_MAX_MEMORY_SIZE (Django checks a declared length; a
    chunked body has none, so its real length is checked too)."""
    try:
        body = request.body
    except RequestDataTooBig:
        return None
    return body if len(body) <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE else None


def _field(loc: tuple) -> str:
    return ".".join(str(part) for part in loc) or "(body)"
