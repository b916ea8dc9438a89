"""Everything the plugin asks of the running Hermes, and the only code that touches Hermes' modules.

Hermes is looked up, never assumed: each function finds what this Hermes
offers (a function, a parameter, a setting) and answers ``None`` or a safe
default where it has nothing, so one plugin serves every Hermes generation.
``lookup`` finds modules and functions, ``home`` the Hermes home of a call,
``limits`` what Hermes caps (hook output, hook time), ``gateway`` and
``session`` what the gateway knows about a message, ``skills`` Hermes' own
rules for which skills a session is offered, ``listing`` the skills listing
Hermes' builder renders for a session, and ``probes`` what ``doctor``
reports about all of it. docs/architecture.md lists each Hermes internal used
here and why no public seam serves instead.
"""
