"""What the plugin believes, and the only code that decides it.

``blocks`` produces each block the plugin injects and enters it in the
``ledger`` (the one way a block becomes trusted); ``live`` judges which
trusted blocks the model will read in a history; ``chats`` keeps, per gateway
chat, what the gateway hook may assume without reading that history; ``store``
holds the ledger and the chat records for one Hermes home and saves them in
the ``state_file``. Nothing a message, a skill or a file says grants trust:
only the bytes of a block the plugin produced itself.
"""
