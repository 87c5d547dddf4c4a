"""The completion check: when the model stops, the request is checked against what happened.

:mod:`~herdsman.middleware.completion.check` is the middleware; the rest is what it is made of:
the typed findings and their words (``findings``, ``findings_text``), the rules by what they read
(``rules``: the reply and the run; ``delivery``: what was delivered, checked in the thread's
files, read through ``lookup``; ``files``: pure rules on a file's text; ``search``: searching and
counting; ``sources``: URLs), the words of intent by language (``intent_words``; the language is
told by :mod:`herdsman.language.detect`), the plan of the calls after a note (``plan``), the
optional judge (``verifier``), the code it runs for the model (``shown_code``, ``command_sense``),
a reply that repeats a note (``note_echo``) and the honest end of a run that could not answer
(``could_not``).
"""
