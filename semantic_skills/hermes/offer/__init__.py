"""Which skills a session is offered: Hermes' own rules, computed once per message in the adapter.

``rules`` makes an :class:`~.rules.Offer` for a message (what the routing
worker must leave out) and says which rule hides a skill read from disk (for
the word-search fallback and ``doctor``); ``roots`` names the folders Hermes
scans; ``orgs`` follows the active organisation of mirrored skills.
"""
