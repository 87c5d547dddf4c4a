"""The loop detector on text: a reply whose tail repeats the same unit back to back is a loop,
in any script; normal text, and a passage said twice apart or a chorus sung twice, are not."""

from __future__ import annotations

from herdsman.models.local.repetition import Loop, LoopDetector

PARAGRAPH = (
    "Rainwater harvesting collects the rain that falls on roofs and stores it in tanks, "
    "so gardens and toilets need less mains water. "
)
PROSE = """A lighthouse is a tower with a bright lamp at its top. Its light is focused by a Fresnel lens,
rings of glass prisms that bend the light into one narrow beam, so it can be seen far out at sea.
The beam turns, or the lamp flashes, in a pattern of its own: sailors read the pattern on their
charts and know which lighthouse they see, and so where they are. Older lighthouses burned oil and
needed a keeper who trimmed the wick every night; today most run on electricity and need no keeper.
Some also sound a horn in fog, when the light cannot be seen. The tower is tall because the earth is
curved: the higher the lamp, the farther away its light can be seen over the horizon.
灯塔是一座顶端装有明亮灯光的塔。菲涅耳透镜把光聚成一束，让远处的船只也能看见。每座灯塔都有自己的闪光规律，
水手对照海图就能认出是哪一座灯塔，从而知道自己的位置。
"""


def stream(text: str, step: int = 3) -> tuple[int, Loop] | None:
    """Feed ``text`` as a model would stream it; (characters fed, loop) when a loop is found."""
    detector = LoopDetector()
    for end in range(step, len(text) + step, step):
        loop = detector.update(text[:end])
        if loop is not None:
            return min(end, len(text)), loop
    return None


def test_a_paragraph_again_and_again_is_a_loop_cut_after_its_first_copy() -> None:
    text = "Here is the report.\n\n" + PARAGRAPH * 6
    fed, loop = stream(text)
    assert text[: loop.cut_in(text)] == "Here is the report.\n\n" + PARAGRAPH
    assert fed < len("Here is the report.\n\n" + PARAGRAPH * 3), "found during the third copy, not at the end"


def test_a_line_again_and_again_is_a_loop() -> None:
    line = "    assert is_palindrome('aba') == True\n"
    text = "def test_palindrome():\n" + line * 100
    fed, loop = stream(text)
    assert loop.unit == len(line) and text[: loop.cut_in(text)] == "def test_palindrome():\n" + line
    assert fed < len("def test_palindrome():\n" + line * 4)


def test_chinese_without_spaces_loops_too() -> None:
    sentence = "雨水收集可以减少自来水的使用，并且有助于城市防洪。"
    text = "总结：" + sentence * 20
    _, loop = stream(text)
    assert loop.unit == len(sentence) and text[: loop.cut_in(text)] == "总结：" + sentence


def test_a_word_or_a_character_again_and_again_is_a_loop_once_it_is_long() -> None:
    assert stream("ha " * 20) is None  # 60 characters: laughter, not yet a loop
    _, loop = stream("Answer: " + "ha " * 200)
    assert loop.unit == 3
    _, loop = stream("好" * 400)
    assert loop.unit == 1


def test_normal_text_and_deliberate_repeats_are_not_loops() -> None:
    assert stream(PROSE) is None
    chorus = "Chorus: we sing along together all night long under the open stars\n"
    assert stream("Verse one.\n" + chorus * 2 + "Verse two is new.\n" + chorus * 2 + "The end.") is None
    # the same passage said twice, with other words between, is a repeat, not a loop
    assert stream(PARAGRAPH + "In short: " + PARAGRAPH + "That is all.") is None
    assert stream("| a | b |\n|---|---|\n" + "".join(f"| {i} | {i * i} |\n" for i in range(60))) is None


def test_what_may_be_a_loop_is_held_back_and_released_when_the_text_goes_on() -> None:
    detector = LoopDetector()
    text = "Intro. " + PARAGRAPH + PARAGRAPH[:50]
    detector.update(text)
    assert len("Intro. " + PARAGRAPH) - 4 <= detector.held <= len("Intro. " + PARAGRAPH), (
        "a second copy's start is held"
    )
    detector.update(text + " but then something else entirely, which nobody wrote before.")
    assert detector.held > len(text), "released once the text differs"


REPORT = (
    "Rainwater harvesting collects the rain that falls on a roof and stores it in a tank for later use "
    "in the garden and the toilets."
)
REPORT_AGAIN = (
    "Rainwater harvesting collects the rain that falls on the roof and keeps it in a tank for later use "
    "in the garden and in the toilets."
)
FLUSH = "A first-flush diverter sends the dirtiest water away, so leaves and dust never reach the storage tank."


def test_the_same_paragraph_with_a_few_words_changed_is_cut_where_it_begins() -> None:
    text = f"# Report\n\n{REPORT}\n\n{FLUSH}\n\n{REPORT_AGAIN}\n\nIt also eases floods in the street."
    _, loop = stream(text)
    assert text[: loop.cut_in(text)] == f"# Report\n\n{REPORT}\n\n{FLUSH}\n\n"


def test_a_near_copy_is_held_back_while_it_is_written_so_it_is_never_sent() -> None:
    before = f"{REPORT}\n\n{FLUSH}\n\n"
    text = before + REPORT_AGAIN
    detector = LoopDetector()
    for end in range(1, len(text) + 1):
        assert detector.update(text[:end]) is None
        assert detector.held <= max(len(before), end - 40), (end, detector.held)  # never more than its first words
    loop = detector.finish()  # the reply ends on the near-copy: found then
    assert loop is not None and text[: loop.cut_in(text)] == before


def test_different_paragraphs_similar_code_and_tool_calls_are_not_near_repeats() -> None:
    other = "The tank needs a lid and an overflow pipe, and it should be cleaned once a year so the water stays safe."
    assert stream(f"{REPORT}\n\n{FLUSH}\n\n{other}\n\nThat is all.") is None
    tests = "".join(
        f"def test_{w}():\n    assert is_palindrome('{w}') is True, 'a palindrome reads the same both ways'\n\n"
        for w in ("abba", "abcba", "racecar")
    )
    assert stream(f"Here are the tests:\n\n```python\n{tests}```\n\nRun them with pytest.") is None
    calls = "".join(
        f'<tool_call>\n{{"name": "read_file", "arguments": {{"path": "/mnt/user-data/uploads/{c}.csv"}}}}\n</tool_call>\n\n'
        for c in ("north", "south", "east")
    )
    detector = LoopDetector(ignore=("<tool_call>",))
    assert all(detector.update(calls[:end]) is None for end in range(1, len(calls) + 1)) and detector.finish() is None
