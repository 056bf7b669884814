"""Plain-language requests the offline engine understands, parsed into a small intent object.

Deterministic rules, no model: the point is that a fresh install with no key still does the
useful read-side things, and says honestly what it cannot do. Requests for changes are read in
changes.py, the words both share in words.py.
"""

from __future__ import annotations

import re
from dataclasses import replace

from wordfreq import zipf_frequency

from llm.offline import words
from llm.offline.changes import new_task, write_intent
from llm.offline.phrasing import WEEKDAYS
from llm.offline.words import Intent

__all__ = ["Intent", "asks_how_clarion_works", "is_knowledge_question", "parse"]

_PASSWORD = re.compile(r"\bpasswords?\b", re.IGNORECASE)
# Changes to notes and projects that changes.py does not read (rewriting a note, a project's
# description, every project at once): offline, these are refused in words.
_OTHER_CHANGE = re.compile(
    words.POLITELY + rf"(?:(?:{words.DELETE_WORDS}|archive|unarchive|rename|edit|update|mark)\b"
    r"|(?:create|add|make|start|new)\b.*\bprojects?\b)",
    re.IGNORECASE,
)
_NOTE_TEXT_CHANGE = re.compile(
    words.POLITELY
    + r"(?:rewrite|replace|clear|change|empty|edit|update|set)\s+(?:the\s+)?(?:text|content|contents|body)\s+(?:of|in)\s+(?:the\s+|my\s+)?\S",
    re.IGNORECASE,
)
# Changes to tasks that changes.py does not read (a description, an assignee, a change to "the
# task" with no name): refused in words.
_OTHER_TASK_CHANGE = re.compile(
    words.POLITELY
    + r"(?:rename|edit|update|change|set(?!\s+up\b)|start|begin|reopen|re-open|reschedule|postpone|prioriti[sz]e|deprioriti[sz]e|assign|unassign"
    r"|copy|duplicate|clone|merge|combine|split"
    r"|mark\b(?!.*\b(?:done|complete|completed|finished)\b))\b",
    re.IGNORECASE,
)
# "Mark it as done", "delete this task": a change to a task named only by a word pointing back at
# the conversation, which the offline engine does not read.
_POINTED_AT_CHANGE = re.compile(
    r"^(?:please\s+|(?:can|could|would) you\s+)?"
    rf"(?:{words.DELETE_WORDS}|complete|finish|close|mark|move)\s+(?P<what>(?:it|them|that|this|those|these)"
    r"(?:\s+(?:one|ones|tasks?|to-?dos?))?)"
    r"(?=\s*(?:[?.!,]|$)|\s+(?:as|to|please|now|for me)\b|\s+(?:done|complete|completed|finished)\s*(?:[?.!,]|$))",
    re.IGNORECASE,
)
# "What did I finish this week?", "what have I got done?": the tasks completed then (or ever).
_WHAT_WAS_DONE = re.compile(
    r"(?:\bwhat|^(?:did|have))\s+(?:did\s+|have\s+|'ve\s+|was\s+|were\s+)?(?:i|we)\s+(?:finish(?:ed)?|complete(?:d)?|close(?:d)?|get(?:\s+\w+)?\s+done|got(?:\s+\w+)?\s+done|gotten done|done"
    r"|(?:do|work on|worked on|working on)\b(?=.*\b(?:today|yesterday|(?:this|last) (?:week|month)|(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b))\b"
    rf"(?:.*?\b(?P<when>{'|'.join(words.PAST_WINDOWS)}))?",
    re.IGNORECASE,
)
_PROJECTS_COMPARED = re.compile(
    r"^(?:which|what)\s+projects?\s+(?:has|have|is|are)\s+(?:the\s+)?(?:most|fewest|least|biggest|busiest|largest|smallest)\b"
    r"|\b(?:busiest|biggest|largest)\s+project\b|^(?:which|what)\s+projects?\s+(?:has|have|are)\s+(?:no|empty)\b"
    r"|^(?:which|what)\s+projects?\s+(?:is|are)\s+(?:done|finished|complete|completed|empty)\b|\bprojects?\s+(?:with\s+no|without)\s+(?:open\s+)?(?:tasks|notes)\b"
)
_DID_FINISH = re.compile(
    r"\b(?:did|have|'ve)\s+(?:i|we)\s+(?:finish(?:ed)?|complete(?:d)?|close(?:d)?|get\s+done|got\s+done|gotten\s+done|done)\b"
    rf"(?:.*?\b(?P<when>{'|'.join(words.PAST_WINDOWS)}))?",
    re.IGNORECASE,
)
_ADDED_TO = re.compile(r"\b(?:to|into)\s+(?:the\s+)?(?:project\s+)?(?P<name>[A-Z][\w&.-]*)")
# "Clean up my tasks (only the stale ones)": no rule says which tasks, so nothing is proposed.
_CLEANUP = re.compile(r"\b(?:clean ?up|tidy(?: up)?|sort out|declutter|prune)\b", re.IGNORECASE)
_QUESTION = re.compile(r"^(how|what|why|where|when|which|who|can|could|does|do|is|are|should)\b", re.IGNORECASE)
# Questions about how something works or what something is belong to the knowledge base, even
# when they name workspace things: "how do I export my tasks to CSV?" asks for instructions, not
# for the task list, and "what do I need to do to connect a model?" for steps, not for to-dos.
# "How many ..." counts the workspace.
_HOW_TO = re.compile(
    r"^(?:(?:please|so|and|but|ok|okay),?\s+)?(?:how\s+(?!many\b|much\b)(?:do|does|did|can|could|should|would|will|is|are|to)\b"
    r"|(?:is it possible|is there a way|what(?:'s| is) the (?:best )?way)\s+to\b|can i\b|where (?:do|can|should) i\b"
    r"|explain\b|what(?:'s| is| are) the difference\b"
    r"|.*?\b(?:(?:have|need) to|should (?:i|we)) do(?: next| first)? (?:to|in order to)\b)",  # "what do I need to do to connect a model?"
    re.IGNORECASE,
)
_CONCEPT = re.compile(
    r"\bdifference between\b|^(?:why\b|what(?:'s| is| are| does)\s+(?:an?|the)\b"
    r"(?!.*\b(?:on my|left|due|overdue|urgent|important|priority|next|latest|newest|last|most recent)\b)|what does .+ mean\b)",
    re.IGNORECASE,
)
_MY_WORKSPACE = re.compile(r"\b(?:my|our)\s+(?:\w+\s+)?(?:tasks?|notes?|projects?|to-?dos?|plate)\b", re.IGNORECASE)
# Questions about how Clarion behaves belong to the user guide even when they use a status word
# or name tasks: in "what happens to what I type while a question is pending?" the pending thing
# is a question card, and "what happens to my tasks when I delete a project?" asks for a rule.
_BEHAVIOUR = re.compile(
    r"^(?:(?:so|and|but|ok|okay),?\s+)?(?:what\s+(?:happens|happened|will happen|would happen)\b|what if\b"
    r"|how\s+(?:long|soon|often)\b(?!\s+ago\b)|how much time\b"
    r"|why\s+(?:does|did|do|is|are|was|were|can't|won't|doesn't|didn't|isn't|wasn't)\b|when\s+(?:does|do|will)\b"
    r"|is there (?:a|an|any)\s+(?:way|limit|setting|shortcut|option|timeout|maximum)\b)",
    re.IGNORECASE,
)
# Clarion's own vocabulary: a question in these words is about the product, unless it also names
# the workspace's tasks, notes or projects ("which notes mention the admin?").
_PRODUCT = re.compile(
    r"\b(?:clarion|the assistant|questions?|cards?|countdown|timer|deadlines?|default option|chat box|composer|what i type"
    r"|typing|shortcuts?|keyboard|knowledge base|citations?|sources?|user guide|offline engine|api key|adapters?|admin"
    r"|prompts?|settings?|confirmations?|environment variables?)\b",
    re.IGNORECASE,
)
_WORKSPACE_NOUN = re.compile(r"\b(?:tasks?|notes?|projects?|to-?dos?|on my plate)\b", re.IGNORECASE)
# What tasks, notes, projects or the assistant are or can do, asked of the kind rather than of
# one's data: "do notes support markdown?", "are my tasks backed up?", "can the assistant delete
# my notes?", "where are my notes stored?", "how many tasks can I have?", "what priorities can a
# task have?". Not "are my tasks done?" nor "does Atlas have open tasks?", which ask about the data.
_PROPERTY = re.compile(
    r"^(?:(?:can|could|does|do|is|are|will|would)\s+(?:(?:a|an|the|my|our)\s+)?"
    r"(?:tasks?|notes?|projects?|to-?dos?|assistant|clarion|other\s+users?|other\s+people|anyone|someone)\b"
    r"(?!.*\b(?:due|overdue|urgent|left|open|done|complete|completed|finished|in\s+progress|started|today|tomorrow|this\s+week)\b)"
    r".*\b(?:support\w*|have|has|belong|stored?|saved|kept|backed\s+up|sync\w*|encrypted|private|shared?|visible|see|attach\w*"
    r"|recur\w*|repeat\w*|import\w*|export\w*|know|change|delete|edit|limit\w*|link\w*|nest\w*|tag\w*|assign\w*)\b"
    r"|where\s+(?:are|is)\s+(?:my|our|the)\s+.*\b(?:stored|saved|kept)\b|who\s+(?:else\s+)?(?:can|could|is\s+able\s+to)\s+(?:see|read|access|edit|change)\b"
    r"|are\s+there\s+(?:any\s+)?limits?\b"
    r"|^(?:what|which)\s+(?:\w+\s+){0,2}(?:can|could|may|does|do)\s+(?:a|an)\s+(?:task|note|project)\s+(?:have|contain|hold|be)\b"
    r"|how\s+many\s+.*\bcan\s+(?:i|we|you)\s+(?:have|create|add|make|store|keep)\b"
    r"|what\s+(?:does|can|do)\s+(?:the\s+assistant|clarion|it|you)\s+(?:know|see|read|remember)\b)",
    re.IGNORECASE,
)


def is_knowledge_question(text: str) -> bool:
    """A how-to, conceptual or how-does-Clarion-behave question, for the knowledge base rather
    than the workspace."""
    raw = text.strip()
    return asks_how_clarion_works(raw) or bool(_CONCEPT.search(raw) and not _MY_WORKSPACE.search(raw))


# "I can't log in", "the upload doesn't work": a problem with Clarion itself, for its guide. A
# thing of one's own that cannot be found ("I can't find the venue note") is not one.
_PROBLEM = re.compile(
    r"^(?:(?:help|hi|hey|so|but|ok|okay)[,!.]?\s+)?(?:i|we)\s+(?:(?:still|just)\s+)?(?:can(?:no|['’])t|cannot|could(?:n['’]t| not)|am\s+unable\s+to)\s+"
    r"(?:log\s*in|login|sign\s*in|log\s+out|sign\s+out|upload|install|connect|reach|access|open\s+(?:clarion|the\s+(?:app|admin|page|chat))"
    r"|start\s+clarion|send\s+(?:a\s+)?messages?|answer\s+(?:the\s+)?questions?|type|change\s+my\s+password)\b"
    r"|^(?:the\s+|my\s+)?(?:login|log-?in|sign-?in|upload)\s+"
    r"(?:does(?:n['’]t| not)|wo(?:n['’]t)|is(?:n['’]t| not))\s+(?:work|load|open|start|connect|respond|working|loading)\w*\b",
    re.IGNORECASE,
)


def asks_how_clarion_works(text: str) -> bool:
    """How to do something, how Clarion behaves, what its kinds of things can do, or a question in
    its own vocabulary — not what something is ("what's the address of the venue?"), which may
    be a fact of the person's own."""
    raw = text.strip()
    if _HOW_TO.search(raw) or _BEHAVIOUR.search(raw) or _PROPERTY.search(raw) or _PROBLEM.search(raw):
        return True
    is_question = bool(_QUESTION.match(raw)) or raw.endswith("?")
    return is_question and bool(_PRODUCT.search(raw)) and not _WORKSPACE_NOUN.search(raw)


# The one task at either end of a listing by when tasks were added: "what's my latest task?",
# "my oldest open to-do in Harbor".
_ONE_END_TASK = re.compile(
    r"\b(?:the|my|your)\s+(?P<end>latest|newest|most\s+recent(?:ly\s+added)?|oldest)\s+"
    r"(?:(?:open|unfinished|pending|to-?do|in[- ]progress|started|completed|finished|done)\s+)?(?:task|to-?do)\b",
    re.IGNORECASE,
)

# "What's the status of Atlas?", "how is the Harbor project going?", "where are we on Atlas?": a
# project named as projects are (capitalised), asked about as a whole.
_PROJECT_STATUS = re.compile(
    r"^(?i:(?:please\s+)?(?:what(?:'s|\s+is)\s+(?:the\s+)?(?:status|progress|state)\s+(?:of|on|in|with)"
    r"|how(?:'s|\s+is)|how\s+far\s+along\s+(?:is|are)|how\s+are\s+things\s+(?:in|on|with)|where\s+are\s+we\s+(?:on|with)|what(?:'s|\s+is)\s+happening\s+(?:in|on|with)"
    r"|(?:give\s+me\s+)?(?:an?\s+)?(?:status|summary|overview|update)\s+(?:of|on|for)|tell\s+me\s+about|describe"
    r"|(?:show|open|view|go\s+to)(?:\s+me)?)\s+(?:the\s+)?(?:project\s+)?)"
    r"(?P<name>[A-Z][\w&-]*)(?i:\s+project)?(?i:\s+(?:going|doing|coming\s+along|looking))?\s*[?.!]*$"
    r"|^(?i:what(?:'s|\s+is)\s+(?:the\s+)?(?:project\s+)?)(?P<about>[A-Z][\w&-]*)(?i:\s+project)?(?i:\s+about)\s*[?.!]*$"
    r"|^(?i:is\s+(?:the\s+)?(?:project\s+)?)(?P<on_track>[A-Z][\w&-]*)(?i:\s+project)?"
    r"(?i:\s+(?:on\s+track|on\s+schedule|behind(?:\s+schedule)?|late|going\s+well))\s*[?.!]*$"
)
# "How am I doing?", "summarize my week", "give me an overview": how the person stands as a whole.
# Only the whole message: "a summary of the release notes" asks for something else.
_OVERVIEW = re.compile(
    r"^(?:(?:please|so|ok|okay),?\s+)?(?:(?:can|could|would)\s+you\s+)?(?:"
    r"how\s+am\s+i\s+doing(?:\s+(?:this\s+week|today|with\s+my\s+(?:tasks|work|to-?dos)))?"
    r"|how(?:'s|\s+is)\s+my\s+(?:week|day|workload)(?:\s+(?:looking|going))?"
    r"|what\s+does\s+my\s+(?:week|day)\s+look\s+like|where\s+do\s+i\s+stand|catch\s+me\s+up|show\s+me\s+my\s+(?:week|day)"
    r"|(?:give\s+me\s+)?(?:an?\s+|my\s+)?(?:weekly\s+|daily\s+)?(?:overview|summary|recap|rundown|status\s+(?:report|update))"
    r"(?:\s+(?:of|on|for)\s+(?:my\s+)?(?:week|day|tasks|work|workload|progress|everything|today|this\s+week))?"
    r"|summari[sz]e\s+(?:my\s+)?(?:week|day|tasks|work|workload|progress|everything)|(?:help\s+me\s+)?plan\s+(?:my|the)\s+week"
    r")(?:\s+please)?\s*[?.!]*$",
    re.IGNORECASE,
)
# "What should I focus on?", "what's next?", "where should I start?": what needs doing first, not
# every open task.
_FOCUS = re.compile(
    r"\b(?:(?:should|shall|could|can|do)\s+(?:i|we)\s+(?:focus\s+on|tackle|prioriti[sz]e|start(?:\s+on|\s+with)?"
    r"|(?:work\s+on|do|finish)\s+(?:next|first|today|now|right\s+now|tonight|this\s+(?:morning|afternoon|evening)))"
    r"|where\s+(?:should|shall|do)\s+(?:i|we)\s+start|what(?:'s|\s+is)\s+(?:up\s+)?next|needs?\s+my\s+attention"
    r"|what(?:'s|\s+is)\s+(?:my|our)\s+next\s+(?:task|to-?do|thing)"
    r"|(?:my|our)\s+priorities|\bplan\s+(?:my|the)\s+day"
    r"|(?:(?:i|we)\s+(?:still\s+)?(?:have|need|got)\s+to\s+(?:do|finish|get\s+done)|on\s+(?:my|our)\s+plate)\s+(?:for\s+)?(?:today|tonight))\b",
    re.IGNORECASE,
)
# "Is the passport task done?", "have I finished buy milk?": the tasks of that title, with their status.
_IS_IT_DONE = re.compile(
    r"^(?:is|are|was|were)\s+(?:the\s+|my\s+)?(?:task\s+)?(?P<term>.+?)\s+(?:task\s+)?(?:done|finished|complete|completed)(?:\s+yet)?\s*\??$"
    r"|^(?:have|did)\s+(?:i|we)\s+(?:already\s+)?(?:finish(?:ed)?|complete(?:d)?|do(?:ne)?)\s+(?:the\s+|my\s+)?(?:task\s+)?(?P<term2>.+?)(?:\s+task)?(?:\s+yet)?\s*\??$",
    re.IGNORECASE,
)
# "Is the passport renewed?", "has the electricity bill been paid?": whether one's own thing is
# done, said with what doing it is; the task that names it answers, with its status.
_IS_IT_DONE_AS_SAID = re.compile(
    r"^(?:is|are|was|were|has|have)\s+(?:the\s+|my\s+)?(?P<term>[\w' -]+?)\s+(?:been\s+|already\s+)?"
    r"(?:[a-z]+ed|paid|sent|bought|made|written|done|taken|given|seen)(?:\s+yet)?\s*\??$",
    re.IGNORECASE,
)
# "What's the status of the dark mode design?": a thing of one's own that is not a project, looked
# up in the task titles (the project's own status is asked by its capitalised name).
_STATUS_OF = re.compile(
    r"^(?:what(?:'s|\s+is)|how(?:'s|\s+is))\s+the\s+(?:status|progress|state)\s+(?:of|on|with)\s+(?:the\s+|my\s+)?(?P<term>[\w' /-]+?)\s*\??$",
    re.IGNORECASE,
)
# What is Clarion's rather than the person's: "was my message sent?" asks how Clarion behaves.
_APP_THING = re.compile(
    r"\b(?:messages?|conversations?|chats?|repl(?:y|ies)|answers?|defaults?|pages?|models?|index|password|account|data"
    r"|uploads?|documents?|guide|server|database|app|rebuild)\b",
    re.IGNORECASE,
)
# A weekday may be part of a title ("is the Friday report done?").
_NOT_ONE_TASK = re.compile(
    rf"^(?:it|them|that|this|those|these)$|\b(?:all|every|everything|any|anything|tasks|notes?|{'|'.join(w for w in words.PAST_WINDOWS if w not in WEEKDAYS)})\b",
    re.IGNORECASE,
)
# "When is the passport due?", "when's buy milk due?": the tasks of that title, with their due dates.
_WHEN_DUE = re.compile(
    r"^when(?:'s|\s+is|\s+are|\s+was|\s+were)\s+(?:the\s+|my\s+)?(?:task\s+)?(?P<term>.+?)\s+(?:task\s+)?due\s*\??$", re.IGNORECASE
)
# "Who do I need to call?", "what do I have to buy?": an errand of one's own, in the tasks; no
# page of documentation says whom its reader has to call.
_ERRAND = re.compile(
    r"^(?:who|whom|what)\s+(?:else\s+)?(?:do|should|must)\s+(?:i|we)\s+(?:still\s+)?(?:(?:need|have|got)\s+to\s+)?"
    r"(?P<term>(?:call|phone|ring|email|e-mail|text|pay(?!\s+attention)|thank|invite|buy|pick\s+up|bring|pack|visit)\b[^?]*?)"
    rf"(?:\s+(?:on\s+|by\s+)?(?P<when>{'|'.join(words.AGENDA_DAYS)}))?\s*[?.!]*$",
    re.IGNORECASE,
)
# "Which tasks are blocked?": a state tasks do not have is looked for in their titles, not ignored
# (which would list every task as if all of them were).
_TASKS_THAT_ARE = re.compile(r"^(?:which|what)\s+(?:of\s+my\s+)?tasks?\s+(?:are|is)\s+(?P<term>[\w' -]+?)\s*[?.!]*$", re.IGNORECASE)
# "Show me the launch plan": something of one's own, by its name, in the tasks and notes.
_SHOW_THE = re.compile(r"^(?:please\s+)?(?:show|open|give|find)\s+(?:me\s+)?(?:the|my)\s+(?P<term>[^?]+?)\s*[?.!]*$", re.IGNORECASE)
_THANKS = re.compile(
    r"^(?:thanks?(?:\s+you)?|thx|ty|cheers|great|perfect|awesome|nice|cool|ok(?:ay)?|got it)(?:[,!.\s]+(?:so much|a lot|again|mate))?[!. ]*$",
    re.IGNORECASE,
)
# "That's wrong", "not what I asked": the last reply misread the request.
_MISREAD = re.compile(
    r"^(?:no,?\s+)?(?:that'?s|that\s+is|this\s+is|it'?s)\s+(?:(?:all|just)\s+)?(?:wrong|incorrect|not\s+(?:right|it|what\s+i\s+(?:asked|meant|wanted|said)))"
    r"|^(?:you\s+)?(?:misunderstood|misread|got\s+it\s+wrong)|^wrong(?:\s+(?:answer|project|task|note|one))?\b|^not\s+what\s+i\s+(?:asked|meant|wanted)",
    re.IGNORECASE,
)
_WHAT_DAY = re.compile(
    r"^(?:what(?:'s|\s+is)\s+(?:the\s+)?(?:today'?s\s+)?(?:date|day)(?:\s+today)?|what\s+day\s+is\s+(?:it|today)(?:\s+today)?"
    r"|(?P<time>what(?:'s|\s+is)\s+the\s+time|what\s+time\s+is\s+it))(?:\s+now)?\s*\??$",
    re.IGNORECASE,
)
# "Find milk", "search for the landlord", "look for anything about the venue": a word looked up in
# the tasks and the notes at once. Not "find notes about …", which names where to look, nor "find
# out how …", a question.
_FIND_ANYWHERE = re.compile(
    r"^(?:please\s+)?(?:search|find|look)\s+(?:for\s+|up\s+)?(?:(?:anything|everything|something|stuff)\s+(?:about|on|regarding|mentioning|with)\s+)?"
    r"(?!(?:out|how|what|why|where|when|which|who|my|all|every)\b)(?P<term>(?:(?!\b(?:tasks?|notes?|projects?|to-?dos?|docs|documentation|guide|knowledge\s+base)\b).)+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_SEARCH_DOCS = re.compile(
    r"^(?:please\s+)?(?:search|look\s+(?:in|up|through)|check)\s+(?:in\s+)?(?:the\s+)?(?:docs|documentation|guide|user\s+guide|knowledge\s+base|help)"
    r"\s+(?:for|about|on)\s+(?P<question>.+?)\s*$|^find\s+out\s+(?P<question2>.+?)\s*$",
    re.IGNORECASE,
)
_SHOW_ONE_NOTE = re.compile(
    r"^(?:please\s+)?(?:(?:i\s+)?(?:can(?:no|['’])t|could(?:n['’]t| not))\s+find|show|open|read|view|get|display|find|look\s+for|pull\s+up"
    r"|where(?:['’]s|\s+is))\s+(?:me\s+)?(?P<what>(?:the|my)\s+(?:.+?\s+)?notes?\b.*?)\s*[?.!]*$"
    r"|^what(?:'s|\s+is)\s+in\s+(?P<what2>(?:the|my)\s+(?:.+?\s+)?notes?\b.*?)\s*[?.!]*$",
    re.IGNORECASE,
)
_SHOW_ONE_TASK = re.compile(
    r"^(?:please\s+)?(?:show|find|open|view|display|get)\s+(?:me\s+)?(?:the\s+|my\s+)?(?:task|to-?do)\s+(?!(?:about|called|named|titled|matching|in|for)\b)"
    r"(?P<term>.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
# "Find the passport renewal task", "where is my dentist task?": one task, named before the word
# "task". Not a listing ("the latest task", "my next to-do"), which the other rules read.
_TASK_NAMED_FIRST = re.compile(
    r"^(?:please\s+)?(?:(?:i\s+)?(?:can(?:no|['’])t|could(?:n['’]t| not))\s+find|show|open|view|display|get|find|look\s+for|pull\s+up"
    r"|where(?:['’]s|\s+is))\s+(?:me\s+)?(?:the|my)\s+(?P<term>.+?)\s+(?:task|to-?do)\s*[?.!]*$",
    re.IGNORECASE,
)
_LISTING_WORD = re.compile(
    r"\b(?:latest|newest|oldest|last|next|first|open|urgent|overdue|completed|finished|done|pending|current|recent|new|old"
    r"|high|low|medium|important|priority|other|same|only|one|\d+)\b",
    re.IGNORECASE,
)
# "Rename this conversation to Planning", "switch to dark mode", "change my password": done in
# Clarion's pages, not to the workspace; the guide says how.
_CHANGE_TO_THE_APP = re.compile(
    rf"(?P<polite>{words.POLITELY})(?:rename|delete|remove|change|set|switch|turn|make|pin|unpin|export|start|open)\b.*"
    r"\b(?:conversations?|chats?|threads?|theme|dark\s+mode|light\s+mode|fonts?|passwords?|accounts?)\b",
    re.IGNORECASE,
)
# "Which tasks aren't in a project?", "tasks with no project", "unfiled tasks".
_UNFILED = re.compile(
    r"\b(?:without|with\s+no|have\s+no|has\s+no|having\s+no|not\s+in|aren[’']?t\s+in|isn[’']?t\s+in|outside(?:\s+of)?|no"
    r"|(?:don[’']?t|doesn[’']?t|do\s+not|does\s+not)\s+(?:have|belong\s+to)|(?:aren[’']?t|isn[’']?t|not)\s+part\s+of)\s+"
    r"(?:a\s+|any\s+)?projects?\b|\bunfiled\b",
    re.IGNORECASE,
)


def parse(text: str) -> Intent:
    if said := _SAID_IN_PASSING.match(text.strip()):
        return _said_in_passing(said)
    intent = _parse(text)
    if intent.kind in ("tasks", "count_tasks") and _UNFILED.search(text):
        return replace(intent, unfiled=True, project_name=None)
    return intent


# Things said the way one tells a person: "I need to buy milk", "todo: call the bank", "note: the
# wifi password is on the fridge", "remember that the wifi password is on the fridge", "undo that".
_SAID_IN_PASSING = re.compile(
    r"^(?:i\s+(?:really\s+)?(?:need|have|must|want)\s+to|i(?:'ve|\s+have)?\s+got\s+to|i\s+should)\s+(?P<need>[^?]+?)[.!]*$"
    r"|^(?:to-?do|task)\s*:\s*(?P<todo>.+)$"
    r"|^(?:note|memo)\s*:\s*(?P<note>.+)$"
    r"|^(?:please\s+)?(?:remember\s+to\s+|(?:remind|help)\s+me\s+to\s+)(?P<todo2>[^?]+)$"
    r"|^(?:please\s+)?(?:remember|make\s+a\s+note|note\s+down|jot\s+down)\s+(?:that\s+)?(?P<remember>[^?]+)$"
    r"|^(?P<undo>(?:please\s+|(?:can|could)\s+you\s+)?undo(?:\s+(?:it|that|this|the\s+last\s+change|my\s+last\s+change))?\s*[?.!]*)$",
    re.IGNORECASE | re.DOTALL,
)
NOTE_TITLE_CHARS = 80
EVERYDAY_ZIPF = 5.35  # words more common than this in English ("still", "here", "later") name no thing
_KNOW_HOW = re.compile(
    r"^(?:know|learn|understand|find\s+out|figure\s+out|work\s+out)\s+(?P<question>(?:how|what|where|when|why|which|if|whether)\b.+)$",
    re.IGNORECASE,
)


_POSSESSIVES = frozenset({"mine", "yours", "ours", "theirs", "hers"})


def _names_a_thing(text: str) -> bool:
    """Some word of it is rarer than everyday English ("blocked", "smoke test"): "still here",
    "what's next" or "mine" name nothing to look for."""
    found = re.findall(r"[a-z]+", text.lower())
    return any(zipf_frequency(word, "en") < EVERYDAY_ZIPF and word not in _POSSESSIVES for word in found)


def _ones_own_thing(term: str) -> bool:
    """A thing of the person's own, named well enough to look for in the task titles: not one of
    Clarion's ("the message", "the index") and not everyday words ("still here")."""
    return not (_PRODUCT.search(term) or _APP_THING.search(term)) and _names_a_thing(term)


def _said_in_passing(said: re.Match[str]) -> Intent:
    if said["undo"]:
        return Intent("knowledge", search="Can I undo a change?")
    if text := said["note"] or said["remember"]:
        text = text.strip()
        title = text if len(text) <= NOTE_TITLE_CHARS else text[:NOTE_TITLE_CHARS].rsplit(" ", 1)[0] + "…"
        return Intent("create_note", title=title, content=text if title != text else "")
    if todo := said["todo"] or said["todo2"]:  # "remember to buy milk" is something to do
        return new_task(todo)
    need = said["need"].strip()
    if asked := _KNOW_HOW.match(need):  # "I need to know how to connect a model"
        return Intent("knowledge", search=f"{asked['question'].rstrip('.!')}?")
    if _PRODUCT.search(need) or re.search(r"\b(?:export|my data|account|model|conversations?|chats?)\b", need, re.IGNORECASE):
        return Intent("knowledge", search=f"How do I {need}?")  # "I need to export my data": done in Clarion's pages
    # "I need to delete the note Retro", "I have to see my tasks": what follows is the request.
    inner = _parse(need)
    if inner.kind not in ("help", "find"):  # "buy milk" alone is looked up; needing to is a task
        return inner
    return new_task(need)


def _parse(text: str) -> Intent:
    raw = text.strip()
    lower = raw.lower()
    if not raw or re.fullmatch(
        r"(hi|hello|hey|help|\?|what can you do\??|who are you\??|how are you(?: doing)?\??|good (?:morning|afternoon|evening|night)|(?:hi|hey) there"
        r"|bye|goodbye|see you(?: later)?|yes|yeah|yep|no|nope|sure|hm+|um+|lol|haha|stop|cancel|never ?mind|nothing|test(?:ing)?"
        r"|tell me a joke|you'?re (?:great|awesome|the best))[!. ]*",
        lower,
    ):
        return Intent("help")
    if _OVERVIEW.match(raw):
        return Intent("overview")
    if _THANKS.match(raw):
        return Intent("thanks")
    if misread := _MISREAD.match(raw):
        rest = raw[misread.end() :].lstrip(" ,.;:!—-")
        return _parse(rest) if rest else Intent("misread")  # "that's wrong, show my tasks in Atlas": the request said again
    if re.fullmatch(r"(?:what|why|how|huh|eh|sorry|pardon)\s*\?*!*", lower):
        return Intent("help")  # a question word alone asks nothing the knowledge base could answer
    if day := _WHAT_DAY.match(raw):
        return Intent("time" if day["time"] else "today")
    if (
        (note := _SHOW_ONE_NOTE.match(raw))
        and (of := words.PROJECT_ADJECTIVE.fullmatch(note["what"] or note["what2"]))
        and of[0].endswith("notes")
    ):
        return Intent("notes", project_name=of["name"])  # "show my Harbor notes": that project's; "the Reading List note" is one note
    if (note := _SHOW_ONE_NOTE.match(raw)) and (title := words.note_title(note["what"] or note["what2"])):
        return Intent("notes", search=title)  # "show the note Venue ideas": that note
    if shown := _SHOW_ONE_TASK.match(raw):  # "show the task Renew passport (in Home)"
        term, where = shown["term"], words.IN_PROJECT_AT_END.search(shown["term"])
        return Intent("tasks", search=(term[: where.start()] if where else term).strip(" \"'“”"), project_name=where and where["name"])
    if (
        (named := _TASK_NAMED_FIRST.match(raw))
        and not _LISTING_WORD.search(term := named["term"])
        and not re.fullmatch(r"[A-Z][\w&-]*", term)  # "my Harbor task": a project's, read below
        and _ones_own_thing(term)
    ):
        return Intent("tasks", search=term.strip(" \"'“”"))  # "find the passport renewal task": that task
    if (about := _PROJECT_STATUS.match(raw)) and not _PRODUCT.search(name := about["name"] or about["about"] or about["on_track"]):
        # "What's Atlas about?", "is Bob late?" may name no project: then it is looked up in the tasks and notes.
        return Intent("maybe_project" if about["about"] or about["on_track"] else "project_status", project_name=name)
    if re.fullmatch(r"[A-Z][\w&-]*(?:\s+[A-Z][\w&-]*){0,2}\s*[?.!]*", raw) and lower.strip("?.! ") not in words.AGENDA_DAYS:
        return Intent("maybe_project", project_name=raw.strip("?.! "))
    if day := re.fullmatch(r"(today|tonight|tomorrow|this week|next week|this weekend)\s*[?.!]*", lower):
        return Intent("tasks", due=words.AGENDA_DAYS[day[1]])  # "tomorrow?": what is due then
    if _PROJECTS_COMPARED.search(raw.lower()):
        return Intent("projects")  # "which project has the most open tasks?": every project's counts answer it
    if (status_of := _STATUS_OF.match(raw)) and _ones_own_thing(status_of["term"]) and not _WORKSPACE_NOUN.search(status_of["term"]):
        return Intent("tasks", search=status_of["term"].strip())
    if found := _FIND_ANYWHERE.match(raw):
        return Intent("find", search=words.FILLER.sub("", found["term"].strip(" \"'“”")))
    if found := _SEARCH_DOCS.match(raw):
        return Intent("knowledge", search=found["question"] or found["question2"])
    if is_knowledge_question(raw):
        return Intent("knowledge", search=raw)
    if (app := _CHANGE_TO_THE_APP.match(raw)) and not _WORKSPACE_NOUN.search(raw):
        # Asked of the knowledge base as the question it is: "how do I rename this conversation?" (the new name is no part of it)
        change = re.sub(r"^((?:rename|retitle)\b.*?)\s+(?:to|as)\s+.+$", r"\1", raw[app.end("polite") :].rstrip(".!?"), flags=re.IGNORECASE)
        return Intent("knowledge", search=f"How do I {change}?")
    by_month = re.search(rf"\b(?:in|during|for)\s+{words.MONTH_NAME.pattern}(?:\s+\d{{4}})?\s*[?.!]*$", lower)
    if by_month and (
        re.search(r"\bdue\b", lower) or _DID_FINISH.search(raw) or words.COMPLETED_IN.search(raw) or _WHAT_WAS_DONE.search(raw)
    ):
        return Intent("open_range")  # "what's due in December?": no window names a month by its name
    if (asked := _IS_IT_DONE.match(raw)) and (term := (asked["term"] or asked["term2"]).strip(" \"'“”")) and not _NOT_ONE_TASK.search(term):
        return Intent("tasks", search=term)  # "is the passport task done?": that task, with its status
    if (said := _IS_IT_DONE_AS_SAID.match(raw)) and _ones_own_thing(said["term"]):
        return Intent("tasks", search=said["term"].strip())
    if done := _WHAT_WAS_DONE.search(raw):
        when = (done["when"] or "").lower()
        return Intent("tasks", status="completed", project_name=words.project_name(raw), completed=words.PAST_WINDOWS.get(when))
    if pointed := _POINTED_AT_CHANGE.match(raw):
        return Intent("which_task", search=pointed["what"])
    if _NOTE_TEXT_CHANGE.match(raw):
        return Intent("cannot")  # "clear the text of the note Retro": a note's text is rewritten by a model only
    if write := write_intent(raw):
        return write
    if (when := _WHEN_DUE.match(raw)) and when["term"].lower() not in words.POINTERS | words.GENERIC_TERMS:
        return Intent("tasks", search=when["term"].strip(" \"'“”"))
    if errand := _ERRAND.match(raw):
        errand_day = words.AGENDA_DAYS[errand["when"].lower()] if errand["when"] else None
        # A title says "Call landlord about the leaking faucet", not "call about the faucet".
        term = re.sub(r"\s+(?:about|for|from|at|with|regarding|to|before|after)\b.*$", "", errand["term"], flags=re.IGNORECASE)
        return Intent("tasks", status="open", search=words.FILLER.sub("", term).strip(), due=errand_day)
    if end := _ONE_END_TASK.search(raw):
        newest = end["end"].lower() != "oldest"
        return Intent("tasks", status=words.status(lower), project_name=words.project_name(raw), newest=newest, oldest=not newest)
    if _FOCUS.search(raw) and not re.search(r"\bnotes?\b|\bprojects?\b", lower) and not words.by_due_date(raw):
        return Intent("focus", project_name=words.project_name(raw))
    if (added := words.WHAT_WAS_ADDED.search(raw)) and not re.search(r"\bnotes?\b", lower):
        when = (added["when"] or "").lower()
        project_name = words.project_name(raw) or ((to := _ADDED_TO.search(raw)) and to["name"]) or None
        return Intent("tasks", status=words.status(lower), project_name=project_name, added=words.PAST_WINDOWS.get(when))
    if _PASSWORD.search(raw) and not _WORKSPACE_NOUN.search(raw):
        return Intent("knowledge", search=raw)  # the guide says how; nothing in the workspace does it
    if _OTHER_TASK_CHANGE.match(raw) or re.match(words.POLITELY + r"(?:archive|unarchive)\b", raw, re.IGNORECASE):
        return Intent("cannot")

    # "What did I write about the landlord?": what one writes down is in the notes.
    mentions_notes = bool(
        re.search(
            r"\bnotes?\b|\b(?:write|wrote|written|jot(?:ted)?)\s+(?:down\s+)?(?:about|on|regarding)\b|\b(?:did|have)\s+i\s+(?:write|written|jot|jotted)\b",
            lower,
        )
    )
    # "What should I work on?" is about tasks; "does it work on my phone?" about Clarion.
    mentions_tasks = bool(
        re.search(
            r"\btasks?\b|\bto[- ]?dos?\b|\bon my plate\b|\b(?<!\bit )(?<!\bthis )(?<!\bclarion )work(ing)? on\b|\b(?:over)?due\b", lower
        )
    )
    mentions_projects = bool(re.search(r"\bprojects?\b", lower))
    owns_projects = mentions_projects and bool(re.search(r"\b(?:my|i have|i've got|we have)\b", lower))
    status = words.status(words.WHAT_IS_OPEN.sub("", lower))  # "what do I have to do?" asks for more than to-dos
    project_name = words.project_name(raw)
    search = words.search_term(words.WHAT_IS_OPEN.sub("", raw), project_name)
    if words.WHAT_IS_OPEN.search(raw) and status == "all":
        status = "open"  # what is on one's plate, or left to work on, is what is not done yet

    if (mentions_notes or mentions_projects) and not mentions_tasks and _OTHER_CHANGE.match(raw):
        return Intent("cannot")
    if mentions_projects and re.search(r"\barchived\s+projects?\b|\bprojects?\b.*\barchived\b", lower):
        return Intent("projects", archived=True)  # "list my archived projects", "which projects are archived?"
    # "Tasks about the urgent fix" searches for a title; "urgent tasks" asks for a priority.
    priority = None if mentions_notes or (search and words.priority(search.lower())) else words.priority(lower)
    if priority and status == "all":
        status = "open"  # what is urgent is what is still to do, unless the question names a status
    counting = bool(re.search(r"\bhow many\b|\bcount\b|\bnumber of\b", lower))
    if re.search(
        r"\bdue\s+(?:(?:any\s*time|sometime)\s+)?(?:after|before|between|until|from)\b|\bto\s+(?:do|finish)\s+(?:before|until)\b", lower
    ):
        return Intent("open_range")  # "due after Friday": a listing of one day or window would be wrong
    if (dated := words.DUE_DATE.search(raw)) and words.due_date(raw) is None:  # "due on Nov 31": no listing would be right
        return Intent("no_such_date", search=re.sub(r"^due\s+(?:(?:on|by)\s+)?(?:the\s+)?", "", dated[0], flags=re.IGNORECASE))
    if due := words.by_due_date(raw):
        # "What's due this week?", "what's due on Dec 5?", "anything overdue in Atlas?", "tasks with no due date"
        return Intent("count_tasks" if counting else "tasks", status=status, project_name=project_name, priority=priority, **due)
    if re.search(
        r"\bdue\s+(?:with)?in\s+(?:the\s+next\s+)?(?:\d+|two|three|four|five|six|a\s+few|several)\s+(?:days?|weeks?|months?)\b", lower
    ):
        return Intent("open_range")  # "due in 2 weeks": more than the next 7 days, and no window says which
    finished = _DID_FINISH.search(raw) or words.COMPLETED_IN.search(raw)
    if finished and (counting or finished["when"]):
        # "How many tasks did I finish this week?", "which tasks did I finish yesterday in Harbor?",
        # "completed tasks from last week": those completed then (or ever).
        when = words.PAST_WINDOWS.get((finished["when"] or "").lower())
        return Intent(
            "count_tasks" if counting else "tasks", status="completed", project_name=project_name, priority=priority, completed=when
        )
    if counting and (mentions_tasks or status != "all"):
        return Intent("count_tasks", status=status, project_name=project_name, priority=priority)
    if priority:
        return Intent("tasks", status=status, search=search, project_name=project_name, priority=priority)
    if mentions_notes:
        # "Any notes from last week?", "notes I wrote today": the notes added or edited then.
        when = words.NOTES_WHEN.search(raw)
        changed = words.PAST_WINDOWS[when["when"].lower()] if when else None
        if when and search and when["when"].lower() in search.lower():
            search = words.search_term(raw[: when.start()] + raw[when.end() :], project_name)
        newest = not counting and bool(re.search(r"\b(?:the|my)\s+(?:latest|newest|last|most\s+recent)\s+note\b", lower))
        # "My most recent note" is the newest whenever it was changed, not those of the recent days.
        changed = None if newest else changed
        return Intent("count_notes" if counting else "notes", search=search, project_name=project_name, changed=changed, newest=newest)
    if mentions_tasks and _CLEANUP.search(raw):
        return Intent("cleanup", project_name=project_name)
    if (
        mentions_tasks
        and status == "all"
        and not (search or project_name)
        and (state := _TASKS_THAT_ARE.match(raw))
        and _names_a_thing(state["term"])
    ):
        return Intent("tasks", search=state["term"])
    if mentions_tasks or status != "all":
        return Intent("tasks", status=status, search=search, project_name=project_name)
    if project_name and (mentions_projects or re.search(r"\b(?:everything|all|anything)\b|^what(?:'s| is) in\b", lower)):
        # "What's in the Atlas project?", "show me everything in Harbor"
        return Intent("tasks", status=status, search=search, project_name=project_name)
    if mentions_projects and (owns_projects or not _QUESTION.match(raw)):
        return Intent("projects")
    if _QUESTION.match(raw) or raw.endswith("?"):
        # Not about the workspace, but a question: the knowledge base may answer it.
        return Intent("knowledge", search=raw)
    if mentions_projects:
        return Intent("projects")
    if re.fullmatch(r"[a-z0-9][\w'-]*(?:\s+[\w'-]+){0,3}\s*\.?", raw) and _names_a_thing(lower):
        # "buy milk", "dentist": a few words alone, one of them a thing, are looked up; the reply says
        # how to add them as a task. "Still here", "maybe later" name nothing.
        return Intent("find", search=raw.rstrip(". "))
    if (shown := _SHOW_THE.match(raw)) and shown["term"].lower() not in words.GENERIC_TERMS and _names_a_thing(shown["term"]):
        return Intent("find", search=shown["term"])
    return Intent("help")
