"""The words of the completion check: each finding rendered as the line the model reads.

The only place the check's wording lives (the rules return :class:`Finding` values with their
evidence; nothing reads these sentences back). The notes are in English, the language the small
model follows best, whatever the request's language (the note of ``reply.wrong_language`` ends
with the request's own line, "请用中文回答。"); a note in another language would be one more table
here, keyed by the same rule ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from herdsman.language.user_words import LANGUAGE_NAMES
from herdsman.middleware.completion.command_sense import senseless
from herdsman.middleware.completion.findings import Finding
from herdsman.middleware.reply_language import ANSWER_LINES
from herdsman.sandbox.base import OUTPUTS

RULES_PREFIX = "[harness check]"
VERIFIER_PREFIX = "[harness review]"


def _or(paths: Sequence[str]) -> str:
    return " or ".join(paths)


def _grep(args: Mapping[str, Any]) -> str:
    """The grep tool's arguments as a note suggests them: pattern 'x' and path 'y' and glob '*.py'."""
    parts = [f"pattern {args['pattern']!r}"]
    if args.get("path"):
        parts.append(f"path {args['path']!r}")
    if args.get("glob"):
        parts.append(f"glob {args['glob']!r}")
    return " and ".join(parts)


_TIPS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "python_c": lambda e: (
        " Python with for, with or if, or newlines inside strings, does not fit in python3 -c: run it as "
        "python3 - <<'EOF' with one statement per line, then EOF."
    ),
    "placeholder": lambda e: (
        f" {e['word']} is a placeholder from the request, not a file: put the name of a file "
        "that exists in its place (ls shows them)."
    ),
    "choices": lambda e: (
        f" {e['name']!r} is not one of them: use one of {e['choices']} instead "
        "(the request's words need not be the names)."
    ),
    "rename": lambda e: (
        ' rename is not installed here: use mv in a loop, e.g. for f in *.txt; do mv "$f" "${f%.txt}.md"; done'
    ),
    "tool_command": lambda e: (
        f" {e['name']} is one of your tools, not a shell command: call the {e['name']} tool itself "
        "(a tool call with its arguments), not bash."
    ),
    "local_module": lambda e: (
        f" {e['file']} imports {e['name']}, and there is no {e['name']}.py beside it in {e.get('folder', '')} "
        f"(its Python files: {e.get('siblings', '')}): change that import to the module that exists there; "
        "installing a package will not help."
    ),
    "module": lambda e: (
        f" The Python package {e['name']} is not installed in this sandbox: write the code with Python's "
        "standard library (or a package that is installed) instead of importing it."
    ),
}


def _failed(e: Mapping[str, Any]) -> str:
    tip = e.get("tip")
    return (
        f"Your last tool call ({e['tool']}) failed: {e['detail']}. Fix the cause and try again, or try another way; "
        "if it truly cannot be done, say why." + (_TIPS[tip["kind"]](tip) if tip else "")
    )


def _unsupported(e: Mapping[str, Any]) -> str:
    counted = e.get("counted")
    head = f"Your answer states {', '.join(e['numbers'])}, which no tool result shows. "
    if counted:
        return head + (
            f"Your {counted['tool']} call said {counted['line']}: if that counts what the request asks about, the "
            f"number is {counted['number']}; use it, in the answer and in any file the request asks for."
        )
    return (
        head + f"Compute it with a tool (for example {e.get('command') or 'python3'}) and answer with the value the "
        "tool prints."
    )


def _changed_not_run(e: Mapping[str, Any]) -> str:
    how = ""
    if e.get("command"):
        how = f" ({e['command']})"
        if e.get("placeholder") and e.get("sample"):
            how = f" ({e['command']}, with {e['placeholder']} a file that exists, such as {e['sample']})"
    return (
        f"You changed {_or(e['scripts'])} but have not run it since. Run it now{how} and check that it does "
        "what the request asks."
    )


def _skill(e: Mapping[str, Any]) -> str:
    where = e.get("where")
    return (
        f"The active {e['skill']} skill delivers {e['pattern']} in {OUTPUTS}, and there is none yet. Do its steps: "
        + (f"write {where} with write_file." if where else "write it with write_file (or the skill's script).")
    )


def _rows(e: Mapping[str, Any]) -> str:
    head = (
        f"The request wants one row per item from {e['low']} to {e['high']} ({e['wanted']} rows), "
        f"but {e['path']} has {e['lines']} lines.\n"
    )
    if e.get("command"):
        return head + f"Your last command printed the {e['wanted']} rows: save them like this:\n{e['command']}"
    return head + (
        f"Generate the rows with a loop instead of typing them: python3 - > {e['path']} <<'EOF' with a for loop that "
        "prints each row (the header line first, when the request asks for one), then EOF."
    )


def _just(e: Mapping[str, Any]) -> str:
    offer, name = e.get("offer"), e["path"]
    if e.get("relative"):
        return (
            f"The request asks for just the path relative to {e['relative']} in {name}, but it holds the full path. "
            f"If it is {offer}, write just {offer} there with write_file."
        )
    thing = f"the {e['what']}"
    holds = f"{e['lines']} lines" if e["lines"] > 1 else f"a sentence: {e['sentence']!r}"
    if e.get("holds_path"):
        holds = f"a path: {e['sentence']!r} (a file name has no /)"
    tail = f" If it is {offer}, write just {offer} there with write_file." if offer else f" Write just {thing} there."
    return f"The request asks for just {thing} in {name}, but it holds {holds}.{tail}"


def _code_not_run(e: Mapping[str, Any]) -> str:
    if e.get("ran"):
        return (
            "Your reply shows code that nothing ran, so the harness ran it for you: its bash call and result follow. "
            "If it failed, fix the cause with your tools; then answer from what it did."
        )
    if e.get("language") == "python":
        return (
            "Your reply shows code that nothing ran. Run it with bash as python3 - <<'EOF', the code with one "
            "statement per line, then EOF; make it write any file the request asks for."
        )
    return "Your reply shows code that nothing ran. Run those commands with bash."


def _cut(e: Mapping[str, Any]) -> str:
    how = f" Save whole lines with bash: {e['command']}" if e.get("command") else ""
    return f"The lines you wrote are cut short: {e['cut']!r} is part of the line {e['line']!r}.{how}"


_CREATE = "The request asks for {path}, which does not exist yet. Create it with your tools."
_EMPTY = "{path} is empty. Write its content."
_NO_TOOL = (
    "You answered without using any tool. Look at the files with your tools (read_file, ls, grep, bash) and answer "
    "from what they show."
)
_UNCHANGED = "The request asks to change {paths}, but it was not changed. Make the change with your tools."

TEXTS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "call.as_text": lambda e: (
        "Your reply contains a tool call written as text, so it was NOT run. Call the tool properly."
    ),
    "tool.unknown": lambda e: (
        f"There is no tool named {', '.join(e['tools'])}. Use your tools ({', '.join(e['available'])}); "
        "bash runs any shell command (cp, mv, python3...)."
    ),
    "reply.echoes_note": lambda e: (
        "Your reply repeated the harness's note, which is for you, not the user. Answer the "
        "user's request itself, in your own words."
    ),
    "source.unseen": lambda e: (
        f"{'The file ' + e['path'] + ' gives' if e.get('path') else 'Your answer gives'} links that no tool "
        f"opened and the user did not give: {', '.join(e['urls'][:5])}. Sources must be real: remove them"
        f"{' and write the file again' if e.get('path') else ''}, or open each with a tool (web_fetch) first and "
        "keep only those that open."
    ),
    "reply.wrong_language": lambda e: (
        f"The user wrote in {LANGUAGE_NAMES.get(e['language'], e['language'])}, and your answer "
        "is in English. Write the whole answer again in that language (names, paths and "
        f"code stay as they are). {ANSWER_LINES.get(e['language'], '')}"
    ).rstrip(),
    "reply.fake_tool_result": lambda e: (
        "Your reply imitates a tool result (<tool_response>); only a tool call gives one. "
        "Call the tool, then answer from what it returns."
    ),
    "reply.placeholder": lambda e: (
        f"Your answer has placeholders ({', '.join(e['placeholders'])}) instead of values. "
        "Compute the values with your tools and give them."
    ),
    "reply.refusal": lambda e: (
        "You refused, but this is a normal task in your own sandbox and your tools can do it. "
        "Continue the work step by step."
    ),
    "path.missing": lambda e: _CREATE.format(path=e["path"]),
    "file.missing": lambda e: _CREATE.format(path=e["path"]),
    "path.empty": lambda e: _EMPTY.format(path=e["path"]),
    "path.not_a_file": lambda e: (
        f"{e['path']} is a folder, but the request asks for a file of that name. Move what the "
        "folder holds elsewhere or remove it (bash), then write the file there."
    ),
    "file.empty": lambda e: _EMPTY.format(path=e["path"]),
    "folder.empty": lambda e: (
        f"The request asks for files in {e['folder']}, which has none yet. Write them there with your tools."
    ),
    "file.change_not_made": lambda e: _UNCHANGED.format(paths=_or(e["paths"])),
    "file.unchanged": lambda e: (
        f"{_or(e['paths'])} was written back unchanged: it holds what it held before. Make the change with your tools."
    ),
    "script.changed_not_run": _changed_not_run,
    "script.output_differs": lambda e: (
        f"{e['command']} printed {e['printed']!r}, but the request expects "
        f"{', '.join(e['missing'])} too. Read {e['path']}, find why, fix it, and run it again."
    ),
    "script.does_not_parse": lambda e: (
        f"{e['path']} does not parse: {e['error']}. "
        + (
            "The harness wrote the code your reply showed into it: its write_file call follows. "
            "Run it now and check that it does what the request asks."
            if e.get("ran")
            else "It must hold working code that does what the request asks, not a description of "
            "it. Write the whole file again (write_file)."
        )
    ),
    "script.printed_nothing": lambda e: (
        f"{e['command']} printed nothing. Make {e['path']} print its result when run like "
        "that (read its command-line arguments from sys.argv), then run it again."
    ),
    "value.not_set": lambda e: (
        f"The request sets {e['key']} to {e['value']}, but {e['path']} still says: {e['line']}. "
        "Change that line (str_replace with the line exactly as it is now), then check the file."
    ),
    "skill.output_missing": _skill,
    "reply.path_missing": lambda e: (
        f"Your answer mentions {e['path']}, but there is no such file. Create it, or correct the answer."
    ),
    "command.failed_not_retried": _failed,
    "number.unsupported": _unsupported,
    "name.unsupported": lambda e: (
        f"Your answer names {', '.join(e['names'])}, which no tool result shows. Find it with a tool "
        "(make the command print the name itself, not only a number) and answer with what it prints."
    ),
    "answer.denied_but_shown": lambda e: (
        f"Your answer says no, but a tool result lists {e['path']}: {e['name']} is there. "
        "Answer again from what the tools showed."
    ),
    "count.not_computed": lambda e: (
        f"Your answer still gives {', '.join(e['numbers'])}, which no command printed. Answer with the "
        "number your command printed, or, if its pattern did not match, fix the command (the result "
        "shows how the file writes it) and count again."
        if e.get("again")
        else f"Your answer gives {', '.join(e['numbers'])}, counted by reading, and no command computed it. "
        f"Count with a command (for example {e.get('command') or 'grep -c, wc -l or python3'}) and "
        "answer with the number it prints."
    ),
    "file.keys_missing": lambda e: (
        f"The request asks for {e['shape']} in {e['path']}, but it has no "
        + ", ".join(repr(k) for k in e["missing"])
        + (f" (its keys: {', '.join(repr(k) for k in e['has'])})" if e["has"] else " (it is empty)")
        + ". Write it again with those keys and their values."
    ),
    "file.template_missing": lambda e: (
        f"{e['path']} lacks {', '.join(repr(m) for m in e['missing'])}: the request asks for lines "
        f"like {', '.join(repr(t) for t in e['templates'])}, with the values in place of the <...> "
        "parts. Write the file again with those lines."
    ),
    "number.missing": lambda e: (
        "The question asks for a number, and your answer has none. Compute it with a tool and answer "
        "with the number it prints."
    ),
    "file.numbers_unsupported": lambda e: (
        f"You wrote {', '.join(e['numbers'])} to {e['path']}, but no tool result shows that. "
        f"Compute it with a tool (run {e.get('command') or 'the script or command'}) and "
        "write what the tool prints."
    ),
    "file.figures_unsupported": lambda e: (
        f"{e['path']} states {', '.join(e['figures'])}, which no tool result shows. Compute "
        "the figures with a tool (python3) first, then write them as the tool prints them."
    ),
    "search.found_nothing": lambda e: (
        f"Your search ({e['tool']} for {e['term']!r}) found nothing, so your answer rests on "
        f"nothing. "
        + (
            f"The harness searched inside every file under the folder for you (grep with {_grep(e['grep'])}): "
            "its call and result follow; answer from what it found."
            if e.get("ran")
            else f"Search inside every file under the folder: call grep with {_grep(e['grep'])}."
        )
    ),
    "search.term_unsearched": lambda e: (
        f"The request is about {e['term']!r}, but none of your tool calls looked for it, so your "
        f"answer rests on something else. Search for it: call grep with {_grep(e['grep'])}."
    ),
    "script.ignores_arguments": lambda e: (
        f"{e['path']} never reads its command-line arguments, so {e['command']} works for these values only: "
        f"read them from sys.argv (sys.argv[1:] are {', '.join(e['args'])}) instead of writing them into the code. "
        "Write the whole file again (write_file)."
    ),
    "skill.not_served": lambda e: (
        f"The {e['skill']} skill serves what it made so the user sees it live, and no server was started: "
        + (
            f"the harness started it in the background on port {e['port']}: its call and result follow. "
            "Now answer the user: what you made, and where they see it."
            if e.get("ran")
            else f"start it with bash and background=true: {e['command']}"
        )
    ),
    "script.raises": lambda e: (
        f"The error {e['error']} was raised in {e['path']} (the traceback's last frame in your files): "
        f"fix its cause in {e['path']}, then run the command again."
    ),
    "script.missing_import": lambda e: (
        f"{e['path']} uses the module {e['name']} without importing it. "
        + (
            f"The harness added import {e['name']} at its top and ran your command again: its call and result "
            "follow; check them, then answer."
            if e.get("ran")
            else f"Add import {e['name']} at its top, then run the command again."
        )
    ),
    "compare.not_made": lambda e: (
        f"The request asks which is the {e['what']}: the harness compared the table's values for you (a python3 "
        "program with the csv module): its call and result follow; answer from what it printed."
        if e.get("table") and e.get("ran")
        else f"The request asks which is the {e['what']}: find it with a command that compares the table's values, "
        "not by eye (python3 with the csv module and max() or min()), then answer with what it prints."
        if e.get("table")
        else f"The request asks which is the {e['what']}: find it with a command that compares, not by eye "
        f"(files by size: {e['command']}; values in a table: python3 with max() or min(), or sort), "
        "then answer with what it prints."
    ),
    "tool.none_used": lambda e: _NO_TOOL,
    "tool.none_used_topic": lambda e: _NO_TOOL,
    "file.lines_cut": _cut,
    "claim.unbacked": lambda e: (
        "Your answer says the work was done, but none of your tool calls wrote a file"
        + (" (mkdir makes an empty folder only)" if e.get("mkdir") else "")
        + ". Do it now with your tools: write each file with write_file, then answer."
    ),
    "code.shown_not_run": _code_not_run,
    "code.files_not_written": lambda e: (
        f"Your reply shows {', '.join(e['paths'])}, but nothing wrote them: write each with write_file "
        "(the whole text), then do the rest of the request with your tools."
    ),
    "code.shown_not_written": lambda e: (
        f"Your reply shows the new code, but {_or(e['paths'])} is unchanged: write that code "
        "into it with write_file (the whole new text), then run it."
    ),
    "answer.offer": lambda e: (
        f"Your answer was the line below; if it is what belongs in {e['path']}, write just that line there "
        f"with write_file:\n{e['value']}"
    ),
    "output.printed_template": lambda e: (
        f"Your last command printed the values but saved nothing to {e['path']}, which the request asks to hold "
        + (
            "its lines with those values. The harness wrote them there for you (its call follows); check them "
            "and answer:\n"
            if e.get("ran")
            else "its lines with those values. If these lines are right, write them there with write_file:\n"
        )
        + e["value"]
    ),
    "output.printed_not_saved": lambda e: (
        _binary_not_saved(e)
        if e.get("binary")
        else f"Your last command printed its result but saved nothing to {e['path']}. Run it again "
        f"with its output saved, like this:\n{e['command']}"
    ),
    "output.grep_not_saved": lambda e: (
        f"Your last command printed the lines but saved nothing to {e['path']}. Save them whole "
        f"with bash: {e['command']}"
    ),
    "script.output_typed": lambda e: (
        (
            f"Run the script the request names ({e['command']}); it must save {e['path']} itself "
            "(change it to do so if it does not), instead of you writing the file."
        )
        if e.get("binary")
        else "Run the script the request names with its output saved, instead of writing the output "
        f"yourself: {e['command']}"
    ),
    "rows.count_wrong": _rows,
    "command.not_run": lambda e: (
        f"The request says `{e['shown']}` must work, and none of your commands ran it. "
        + (
            f"The harness ran it for you ({e['command']}): its call and result follow. Fix what it shows, "
            "then run it again."
            if e.get("ran")
            else f"Run it to see what it does: {e['command']}"
        )
    ),
    "glob.shallow": lambda e: (
        f"`{e['command']}` reached only the {e['suffix']} files directly in {e['folder']}; "
        + ", ".join(e["missed"])
        + (f" and {e['more']} more" if e["more"] else "")
        + f" are in its subfolders. To reach every {e['suffix']} file below {e['folder']}, run:\n{e['fix']}"
    ),
    "edit.not_everywhere": lambda e: (
        f"You changed {e['old']} to {e['new']}, but {e['old']} is still in "
        + ", ".join(e["files"])
        + (f" and {e['more']} more files" if e["more"] else "")
        + f" of {e['folder']}. Make the same change there: {e['command']}"
    ),
    "server.not_used": lambda e: (
        f"The server you started (job {e['job']}) listens on port {e['port']}, but no command used it yet: "
        "the request goes on after starting it."
        + _served(e)
        + ("" if e.get("ran") else f" Fetch from it: {e['command']}")
    ),
    "server.not_found": lambda e: (
        f"{e['path']} is not found on the server on port {e['port']} (404)."
        + _served(e)
        + ("" if e.get("ran") else f" Fetch it: {e['command']}")
    ),
    "skill.output_misnamed": lambda e: (
        f"{e['path']} holds what the {e['skill']} skill delivers, written without its file name. "
        + (
            f"The harness moved it to {e['target']}: its call and result follow. Go on with the skill's next step."
            if e.get("ran")
            else f"Move it where it belongs: {e['command']}"
        )
    ),
    "skill.check_not_run": lambda e: (
        f"The {e['skill']} skill checks what it delivers, and nothing checked {e['path']} since it was written. "
        + (
            "The harness ran its check for you: its call and result follow. Fix what it reports, or answer if it "
            "found no problem."
            if e.get("ran")
            else f"Run its check: {e['command']}"
        )
    ),
    "file.not_just_value": _just,
    "file.not_sorted": lambda e: (
        f"The request asks for it sorted, but {e['path']} is not in order ({', '.join(e['items'])}...). "
        "Sort it with a command (python3 with sorted(), or sort) and write the result."
    ),
    "rename.double_extension": lambda e: (
        f"The files are now named like {e['example']}: the .{e['old']} must go. Fix the names with bash: {e['command']}"
    ),
}
"""Rule id -> the line the model reads, made from the finding's evidence."""


def _served(e: Mapping[str, Any]) -> str:
    """Where a file server's URL path leads, when the request's path is in a folder below the one it serves."""
    if e["url"] == e["path"] or not e.get("folder"):
        return ""
    served = e["folder"].rstrip("/") + e["url"][: -len(e["path"])]
    return (
        f" It serves {e['folder']}, so {e['path']} of {served} is at http://127.0.0.1:{e['port']}{e['url']} there "
        f"(to serve {served} itself, start the server with --directory {served})."
    )


def _binary_not_saved(e: Mapping[str, Any]) -> str:
    """A binary deliverable still missing: the code that makes it must save it (printed text is no image)."""
    return (
        f"{e['path']} is still missing, and it is a binary file: printing text cannot make it. Make your code save it "
        f"itself (for a chart: plt.savefig('{e['path']}'); for other files, the library's save or write call), "
        "run the code with bash, then check that the file exists."
    )


def render(finding: Finding) -> str:
    """The line the model reads for ``finding`` (a verifier's finding: its detail). A line that
    proposes a command printing text into a binary file is never sent: it says how to save that
    file instead (see :mod:`~herdsman.middleware.completion.command_sense`)."""
    text = TEXTS.get(finding.rule)
    if text is None:
        return str(finding.evidence.get("detail") or "The request is not fully carried out.")
    line = text(finding.evidence)
    if (
        finding.evidence.get("ran")
        and finding.evidence.get("command")
        and finding.rule
        not in (
            "code.shown_not_run",
            "command.not_run",
            "skill.check_not_run",
            "skill.output_misnamed",
            "script.missing_import",
        )
        and not finding.evidence.get("table")  # a program: its text says what it did
    ):
        line += (
            f" The harness ran {finding.evidence.get('command')} for you: its call and result follow; "
            "answer from what it printed."
        )
    target = senseless(line)
    return _binary_not_saved({"path": target}) if target is not None else line


def note_text(findings: Sequence[Finding], review: bool = False) -> str:
    """The note sent back to the model: a header (the verifier's, with ``review``) and one line per finding."""
    prefix = VERIFIER_PREFIX if review else RULES_PREFIX
    return f"{prefix} Not done yet:\n" + "\n".join(f"- {render(f)}" for f in findings)
