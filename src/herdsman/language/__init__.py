"""The language of a text and what the harness says to a person in it; no imports of Herdsman.

- :mod:`.detect`: which language a text is written in, by the script of its letters;
- :mod:`.user_words`: the sentences the harness itself says to a person, by language.

The words of intent the completion check's rules read stay with the rules
(:mod:`herdsman.middleware.completion.intent_words`).
"""
