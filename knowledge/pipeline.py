"""The knowledge-base answer pipeline: a LangGraph StateGraph.

    START → gate ─┬─ not an answerable question ─────────────────────────────► END (skip)
                  └► select ─┬─ nothing relevant ──────────────────────────────► END (skip)
                             └► load ─┬─ nothing loaded ───────────────────────► END (skip)
                                      └► generate ─┬─ no answer / no citation ─► END (skip)
                                                   └► verify ─┬─ rejected ─────► END (skip)
                                                              └─ approved ─────► END (answer)

Every decision is a pydantic model (knowledge.schemas). With a model each node makes one
structured call; with the offline engine each node has a deterministic implementation
(knowledge.offline) and the graph is the same. The graph is compiled once, with checkpointing
disabled; state is a small TypedDict — source text stays in the per-request context, never in
the state. `run` never raises: any failure is `should_reply=false` with the reason in `debug`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Literal, Protocol, TypedDict, TypeVar, cast

from channels.db import database_sync_to_async
from django.conf import settings
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel

from knowledge import offline, selectors
from knowledge.citations import cite
from knowledge.llm_calls import CallTrace, call_model
from knowledge.metrics import AI_GATE, AI_REQUESTS, AI_SELECTED_SOURCES, AI_VERIFICATION
from knowledge.models import AIConfig
from knowledge.ranking import Corpus
from knowledge.schemas import AIResult, Citation, ClosestPage, DraftAnswer, GateDecision, SourceSelection, VerificationDecision
from knowledge.selectors import IndexSnapshot, LoadedSource
from llm import ChatMessage, LLMClient, LLMError

log = logging.getLogger("clarion.knowledge")

MAX_QUESTION_CHARS = 4000
HISTORY_MESSAGES = 10
HISTORY_MESSAGE_CHARS = 1500


# ---------------------------------------------------------------------------- state and context


class LoadedRef(TypedDict):
    source_id: str
    title: str
    url: str
    chars: int


class PipelineState(TypedDict, total=False):
    question: str
    history: list[dict]  # [{"role": "user"|"assistant", "content": str}], oldest first, capped
    gate: dict  # GateDecision
    query: str
    offered_count: int  # index lines the selector saw
    selected_source_ids: list[str]
    rejected_source_ids: list[str]  # selector output that named no indexed source
    loaded_sources: list[LoadedRef]
    failed_to_load: list[str]
    draft: str
    citations: list[dict]  # Citation
    dropped_citations: list[int]
    verification: dict  # VerificationDecision
    skip_reason: str


@dataclass(frozen=True)
class Policy:
    """The AIConfig values one request uses, read once at its start."""

    request_timeout_seconds: float
    llm_timeout_seconds: float
    max_retries: int
    gating_prompt: str
    selection_prompt: str
    answer_prompt: str
    verification_prompt: str
    answer_scope_prompt: str
    refusal_policy: str
    max_sources: int
    max_source_chars: int
    max_answer_chars: int
    require_citations: bool

    @classmethod
    def from_config(cls, config: AIConfig) -> Policy:
        # The per-call timeout and retries are transport settings: the environment's, as for the chat.
        transport = {"llm_timeout_seconds": settings.LLM_TIMEOUT_SECONDS, "max_retries": settings.LLM_MAX_RETRIES}
        return cls(**transport, **{name: getattr(config, name) for name in cls.__dataclass_fields__ if name not in transport})


Loader = Callable[[list[str]], Awaitable[dict[str, LoadedSource]]]
Schema = TypeVar("Schema", bound=BaseModel)


@dataclass
class PipelineContext:
    client: LLMClient
    policy: Policy
    index: IndexSnapshot | None
    loader: Loader
    prefilter_candidates: int
    texts: dict[str, str] = field(default_factory=dict)  # loaded source text, by source_id
    kinds: dict[str, str] = field(default_factory=dict)  # loaded source kind (markdown, rst, ...), by source_id
    weights: dict[str, float] | None = None  # the question's terms → idf in the current build (offline)
    corpus: Corpus | None = None  # the current build's statistics and pages (offline)
    trace: CallTrace = field(default_factory=CallTrace)
    latency_ms: dict[str, float] = field(default_factory=dict)

    async def structured(self, purpose: str, *, system: str, user: str, schema: type[Schema]) -> Schema:
        messages = [
            ChatMessage(role="system", content=f"{system.strip()}\n\n{_format_instruction(schema)}"),
            ChatMessage(role="user", content=user),
        ]
        timeout = self.policy.llm_timeout_seconds
        return await call_model(
            purpose=purpose,
            make_call=lambda: self.client.structured(messages, schema=schema, timeout=timeout),
            timeout_seconds=timeout,
            max_retries=self.policy.max_retries,
            trace=self.trace,
        )


@functools.cache
def _format_instruction(schema: type[BaseModel]) -> str:
    # Servers that ignore response_format (some llama.cpp and Ollama builds) still read this.
    return "Reply with only a JSON object that matches this JSON schema:\n" + json.dumps(schema.model_json_schema(), separators=(",", ":"))


class Node(Protocol):
    """A node of the graph: reads the state, returns the keys it changes."""

    def __call__(self, state: PipelineState, runtime: Runtime[PipelineContext]) -> Awaitable[dict]: ...


def _timed(name: str) -> Callable[[Node], Node]:
    def decorate(fn: Node) -> Node:
        @functools.wraps(fn)
        async def wrapper(state: PipelineState, runtime: Runtime[PipelineContext]) -> dict:
            started = time.perf_counter()
            try:
                return await fn(state, runtime)
            finally:
                runtime.context.latency_ms[name] = round((time.perf_counter() - started) * 1000, 2)

        return wrapper

    return decorate


def _flag(value: bool) -> str:
    return "true" if value else "false"


# ---------------------------------------------------------------------------- nodes


@_timed("gate")
async def gate(state: PipelineState, runtime: Runtime[PipelineContext]) -> dict:
    ctx = runtime.context
    if ctx.client.is_offline:
        decision = offline.gate(state["question"])
    else:
        system = (
            f"{ctx.policy.gating_prompt.strip()}\n\nAnswer scope:\n{ctx.policy.answer_scope_prompt.strip()}"
            f"\n\nRefusal policy:\n{ctx.policy.refusal_policy.strip()}"
        )
        decision = await ctx.structured("gate", system=system, user=_conversation_text(state), schema=GateDecision)
    answerable = decision.is_question and decision.is_answerable
    AI_GATE.labels(answerable=_flag(answerable)).inc()
    update: dict = {"gate": decision.model_dump(), "query": " ".join((decision.rewrite_query or state["question"]).split())[:500]}
    if not decision.is_question:
        update["skip_reason"] = "gate: not a question"
    elif not decision.is_answerable:
        update["skip_reason"] = "gate: not answerable"
    return update


@_timed("select")
async def select(state: PipelineState, runtime: Runtime[PipelineContext]) -> dict:
    ctx = runtime.context
    index = ctx.index
    if index is None or index.source_count == 0:
        AI_SELECTED_SOURCES.observe(0)
        return {"selected_source_ids": [], "offered_count": 0, "skip_reason": "select: the knowledge base has no index yet"}
    query = state["query"]
    rejected: list[str] = []
    if ctx.client.is_offline:
        # The build's statistics are usually in memory already: no database hop then.
        corpus = selectors.cached_corpus(index_pk=index.pk) or await database_sync_to_async(selectors.search_corpus)(index_pk=index.pk)
        ctx.corpus = corpus
        ranked = corpus.rank(query, limit=ctx.policy.max_sources, restated_headings=True) if corpus else []
        ctx.weights = corpus.weights(query) if corpus else None
        selected, offered = [r.source_id for r in ranked], index.source_count
    else:
        if index.text is None:
            # Too many sources for one prompt: the best-ranked candidates only (BM25 by section).
            ranked = await database_sync_to_async(selectors.prefilter_candidates)(query=query, limit=ctx.prefilter_candidates)
            lines = [r.index_line for r in ranked]
        else:
            lines = [line for line in index.text.splitlines() if line.strip()]
        offered = len(lines)
        if not lines:
            AI_SELECTED_SOURCES.observe(0)
            return {"selected_source_ids": [], "offered_count": 0, "skip_reason": "select: no source matches the question"}
        user = f"Question: {query}\n\nIndex ({offered} sources):\n" + "\n".join(lines)
        decision = await ctx.structured("select", system=ctx.policy.selection_prompt, user=user, schema=SourceSelection)
        selected, rejected = bound_selection(
            decision.selected_source_ids, indexed={line.split(" — ", 1)[0] for line in lines}, max_sources=ctx.policy.max_sources
        )
    AI_SELECTED_SOURCES.observe(len(selected))
    update: dict = {"selected_source_ids": selected, "rejected_source_ids": rejected, "offered_count": offered}
    if not selected:
        update["skip_reason"] = "select: no relevant source"
    return update


def bound_selection(raw_ids: list[str], *, indexed: set[str], max_sources: int) -> tuple[list[str], list[str]]:
    """The selector's ids that name indexed sources, deduplicated, in its order, first max_sources."""
    selected: list[str] = []
    rejected: list[str] = []
    for raw in raw_ids:
        source_id = raw.strip().strip("`'\"").split(" — ", 1)[0].strip()
        if source_id not in indexed:
            rejected.append(raw)
        elif source_id not in selected:
            selected.append(source_id)
    return selected[: max(0, max_sources)], rejected


@_timed("load")
async def load(state: PipelineState, runtime: Runtime[PipelineContext]) -> dict:
    ctx = runtime.context
    ids = state["selected_source_ids"]
    try:
        if ctx.corpus is not None and ctx.loader is _DEFAULT_LOADER:
            found = selectors.sources_from_corpus(ctx.corpus, source_ids=ids)
        else:
            found = await ctx.loader(ids)
    except Exception:
        log.exception("kb sources could not be loaded", extra={"source_ids": ids})
        found = {}
    loaded: list[LoadedRef] = []
    failed: list[str] = []
    for source_id in ids:
        source = found.get(source_id)
        if source is None or not source.content.strip():
            failed.append(source_id)
            log.warning("kb source failed to load source_id=%s", source_id, extra={"source_id": source_id})
            continue
        # The model reads at most max_source_chars of a source; the offline engine reads it all.
        text = source.content if ctx.client.is_offline else source.content[: ctx.policy.max_source_chars]
        ctx.texts[source_id] = text
        ctx.kinds[source_id] = getattr(source, "kind", "markdown")
        loaded.append(LoadedRef(source_id=source_id, title=source.title, url=source.url, chars=len(text)))
    update: dict = {"loaded_sources": loaded, "failed_to_load": failed}
    if not loaded:
        update["skip_reason"] = "load: no selected source could be loaded"
    return update


@_timed("generate")
async def generate(state: PipelineState, runtime: Runtime[PipelineContext]) -> dict:
    ctx = runtime.context
    policy = ctx.policy
    loaded = state["loaded_sources"]
    if ctx.client.is_offline:
        draft = offline.answer(
            question=state["query"],
            sources=[(s["title"], ctx.texts[s["source_id"]], ctx.kinds.get(s["source_id"], "markdown")) for s in loaded],
            max_chars=policy.max_answer_chars,
            weights=ctx.weights,
        )
    else:
        user = (
            f"{_conversation_text(state)}\n\nSources:\n\n{_numbered_sources(loaded, ctx.texts)}\n\n"
            f"Answer in at most {policy.max_answer_chars} characters."
        )
        draft = await ctx.structured("answer", system=policy.answer_prompt, user=user, schema=DraftAnswer)
    if not draft.answered_from_sources or not draft.answer.strip():
        return {"draft": "", "citations": [], "skip_reason": "generate: the sources do not answer the question"}
    cited = cite(draft.answer, available=len(loaded), max_chars=policy.max_answer_chars)
    citations = [
        Citation(n=n, source_id=loaded[i - 1]["source_id"], title=loaded[i - 1]["title"], url=loaded[i - 1]["url"]).model_dump()
        for n, i in enumerate(cited.order, start=1)
    ]
    dropped = sorted(set(cited.dropped) | {n for n in draft.citations if not 1 <= n <= len(loaded)})
    update: dict = {"draft": cited.text, "citations": citations, "dropped_citations": dropped}
    if not cited.text.strip():
        update["skip_reason"] = "generate: empty answer"
    elif policy.require_citations and not citations:
        update["skip_reason"] = "generate: no citation to a loaded source"
    return update


@_timed("verify")
async def verify(state: PipelineState, runtime: Runtime[PipelineContext]) -> dict:
    ctx = runtime.context
    # Numbered as the draft's markers: [n] is citations[n - 1].
    cited = [ctx.texts[c["source_id"]] for c in state["citations"]]
    if ctx.client.is_offline:
        kinds = [ctx.kinds.get(c["source_id"], "markdown") for c in state["citations"]]
        decision = offline.verify(draft=state["draft"], sources=cited, kinds=kinds)
    else:
        # The cited sources, numbered as the draft cites them; all loaded ones if it cites none.
        refs = [LoadedRef(source_id=c["source_id"], title=c["title"], url=c["url"], chars=0) for c in state["citations"]]
        refs = refs or state["loaded_sources"]
        user = f"Question: {state['query']}\n\nSources:\n\n{_numbered_sources(refs, ctx.texts)}\n\nDraft answer:\n{state['draft']}"
        decision = await ctx.structured("verify", system=ctx.policy.verification_prompt, user=user, schema=VerificationDecision)
    AI_VERIFICATION.labels(good_enough=_flag(decision.is_good_enough)).inc()
    update: dict = {"verification": decision.model_dump()}
    if not decision.is_good_enough:
        update["skip_reason"] = "verify: the draft was rejected"
    return update


def _conversation_text(state: PipelineState) -> str:
    lines = [f"{m['role']}: {m['content']}" for m in state.get("history") or []]
    earlier = "Earlier messages (oldest first):\n" + "\n".join(lines) + "\n\n" if lines else ""
    return f"{earlier}Latest message (the question):\n{state['question']}"


def _numbered_sources(refs: list[LoadedRef], texts: dict[str, str]) -> str:
    return "\n\n".join(f"[{n}] {ref['title']} ({ref['source_id']})\n{texts[ref['source_id']]}" for n, ref in enumerate(refs, start=1))


# ---------------------------------------------------------------------------- the graph


def _continue_unless_skipped(state: PipelineState) -> Literal["continue", "stop"]:
    return "stop" if state.get("skip_reason") else "continue"


def build_graph() -> CompiledStateGraph[PipelineState, PipelineContext, PipelineState, PipelineState]:
    builder = StateGraph(PipelineState, context_schema=PipelineContext)
    for name, action in (("gate", gate), ("select", select), ("load", load), ("generate", generate), ("verify", verify)):
        builder.add_node(name, action)
    builder.add_edge(START, "gate")
    for node, following in (("gate", "select"), ("select", "load"), ("load", "generate"), ("generate", "verify")):
        builder.add_conditional_edges(node, _continue_unless_skipped, {"continue": following, "stop": END})
    builder.add_edge("verify", END)
    # No checkpointer, and none inherited: the pipeline keeps no memory between requests.
    return builder.compile(checkpointer=False, name="knowledge_answer")


GRAPH = build_graph()


# ---------------------------------------------------------------------------- running it


async def _load_sources(source_ids: list[str]) -> dict[str, LoadedSource]:
    return await database_sync_to_async(selectors.load_sources)(source_ids=source_ids)


_DEFAULT_LOADER = _load_sources


def _inputs() -> tuple[Policy, IndexSnapshot | None]:
    policy = Policy.from_config(selectors.get_ai_config())
    return policy, selectors.index_for_pipeline(prefilter_threshold=settings.KNOWLEDGE_PREFILTER_THRESHOLD)


def clean_history(history: list[dict] | None) -> list[dict]:
    cleaned = []
    for message in history or []:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        text = message.get("content") if message.get("content") is not None else message.get("text")
        if isinstance(text, str) and text.strip():
            cleaned.append({"role": message["role"], "content": text.strip()[:HISTORY_MESSAGE_CHARS]})
    return cleaned[-HISTORY_MESSAGES:]


async def run(
    *,
    question: str,
    history: list[dict] | None,
    request_context: dict | None,
    client: LLMClient,
    loader: Loader | None = None,
) -> AIResult:
    started = time.perf_counter()
    context_fields = {key: (request_context or {}).get(key) for key in ("platform", "channel_id", "thread_id", "message_id")}
    state: PipelineState = {"question": " ".join((question or "").split())[:MAX_QUESTION_CHARS], "history": clean_history(history)}
    ctx: PipelineContext | None = None
    error: str | None = None
    try:
        policy, index = await database_sync_to_async(_inputs)()
        ctx = PipelineContext(
            client=client,
            policy=policy,
            index=index,
            loader=loader or _load_sources,
            prefilter_candidates=settings.KNOWLEDGE_PREFILTER_CANDIDATES,
        )
        if not state["question"]:
            state = {**state, "skip_reason": "gate: empty question"}
        else:
            async with asyncio.timeout(policy.request_timeout_seconds):
                # The final state: ainvoke's declared type covers its other stream modes too.
                state = cast(PipelineState, await GRAPH.ainvoke(state, context=ctx))
    except TimeoutError:
        error = f"timeout: no verified answer within {ctx.policy.request_timeout_seconds:g} s" if ctx else "timeout"
    except LLMError as exc:
        error = f"llm_{exc.kind}: {exc.user_message}"
    except Exception as exc:  # a bug must not reach the adapter or the chat: silence, and a log
        log.exception("kb pipeline failed")
        error = f"internal: {type(exc).__name__}"

    if error:
        result_label = "error"
    elif state.get("skip_reason"):
        result_label = "skipped"
    else:
        result_label = "answered"
    total_ms = round((time.perf_counter() - started) * 1000, 2)
    debug = _debug(state, ctx, client=client, result_label=result_label, error=error, total_ms=total_ms)
    AI_REQUESTS.labels(result=result_label).inc()
    _log(context_fields, state, ctx, debug)
    if result_label != "answered":
        closest = _closest_pages(state, ctx) if result_label == "skipped" else []
        return AIResult(should_reply=False, reply_text=None, citations=[], closest_pages=closest, debug=debug)
    return AIResult(should_reply=True, reply_text=state["draft"], citations=[Citation(**c) for c in state["citations"]], debug=debug)


# When the sources were read and none answered, the pages that came closest are named (a chat
# says where to look): at most CLOSEST_PAGES, in the selection's order. With the offline engine only
# a page that has at least CLOSE_PAGE_SHARE of the question's weight: a question about tungsten's
# boiling point is not sent to a page that merely says "point".
CLOSEST_PAGES = 2
CLOSE_PAGE_SHARE = 0.5


def _closest_pages(state: PipelineState, ctx: PipelineContext | None) -> list[ClosestPage]:
    """For a skipped request: sources were loaded only when the skip came after loading them."""
    loaded = state.get("loaded_sources") or []
    if ctx is not None and ctx.corpus is not None and ctx.weights:
        corpus, weights = ctx.corpus, ctx.weights
        loaded = [s for s in loaded if corpus.page_share(weights, s["source_id"]) >= CLOSE_PAGE_SHARE]
    return [ClosestPage(source_id=s["source_id"], title=s["title"], url=s["url"]) for s in loaded[:CLOSEST_PAGES]]


def _debug(
    state: PipelineState, ctx: PipelineContext | None, *, client: LLMClient, result_label: str, error: str | None, total_ms: float
) -> dict:
    debug: dict = {
        "result": result_label,
        "engine": "offline" if client.is_offline else "model",
        "skip_reason": state.get("skip_reason"),
        "error": error,
        "gate": state.get("gate"),
        "query": state.get("query"),
        "index_sources": ctx.index.source_count if ctx and ctx.index else 0,
        "offered_count": state.get("offered_count"),
        "selected_source_ids": state.get("selected_source_ids", []),
        "rejected_source_ids": state.get("rejected_source_ids", []),
        "loaded_source_ids": [s["source_id"] for s in state.get("loaded_sources", [])],
        "failed_to_load": state.get("failed_to_load", []),
        "dropped_citations": state.get("dropped_citations", []),
        "verification": state.get("verification"),
        "draft": state.get("draft") or None,
        "latency_ms": {**(ctx.latency_ms if ctx else {}), "total": total_ms},
        "llm_calls": [c.as_dict() for c in ctx.trace.calls] if ctx else [],
    }
    return debug


def _log(context_fields: dict, state: PipelineState, ctx: PipelineContext | None, debug: dict) -> None:
    gate_decision = state.get("gate") or {}
    verification = state.get("verification") or {}
    fields = {
        **context_fields,
        "result": debug["result"],
        "skip_reason": debug["skip_reason"],
        "error": debug["error"],
        "gate.is_question": gate_decision.get("is_question"),
        "gate.is_answerable": gate_decision.get("is_answerable"),
        "gate.reason": gate_decision.get("reason"),
        "selection.selected_sources_count": len(state.get("selected_source_ids", [])),
        "loading.loaded_sources_count": len(state.get("loaded_sources", [])),
        "verification.is_good_enough": verification.get("is_good_enough"),
        "verification.issues_count": len(verification.get("issues", [])) if verification else None,
        "llm.calls": len(debug["llm_calls"]),
        "llm.seconds": round(ctx.trace.model_seconds, 4) if ctx else 0.0,
        **{f"latency_ms.{name}": ms for name, ms in debug["latency_ms"].items()},
    }
    message = " ".join(f"{k}={_log_value(v)}" for k, v in fields.items() if v is not None and v != "")
    level = logging.WARNING if debug["result"] == "error" else logging.INFO
    log.log(level, "kb answer %s", message, extra={"kb": fields, **{k: v for k, v in fields.items()}})


def _log_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and (" " in value or not value):
        return json.dumps(value)
    return str(value)
