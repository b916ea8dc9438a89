"""How much text each part handles, one named limit per purpose.

Plain constants, so the core, the worker and its host can all import them.
"""

MAX_MESSAGE_CHARS = 16_000  # a message's text as the worker receives it (longer texts are clipped first)
MAX_QUERY_CHARS = 2_048  # a query as one embedding reads it, and as search_skills sends it
MAX_BODY_CHARS = 200_000  # a skill body in a worker's answer: the largest cap a setting allows
DEFAULT_MAX_SKILL_CHARS = 16_000  # a skill body in a block or a search_skills answer, unless a setting says otherwise
MAX_HINT_CHARS = 300  # a hint block, whole: the skill's name, its one-line description and how to load it
