import type { KeyboardEvent } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { pickerKey, SkillPicker } from "./SkillPicker";

const shown = [
  { name: "data-analysis", description: "Analyze a CSV file. Draw charts." },
  { name: "diagram", description: "Draw a diagram." },
  { name: "reporter", description: "Weekly sales", agentId: "a1" },
];

function press(key: string, active = 0, shift = false) {
  const seen: string[] = [];
  let prevented = false;
  const e = { key, shiftKey: shift, preventDefault: () => { prevented = true; } } as unknown as KeyboardEvent;
  const handled = pickerKey(e, shown, active, {
    move: (i) => seen.push(`move ${i}`),
    pick: (c) => seen.push(`pick ${c.name}`),
    close: () => seen.push("close"),
  });
  return { handled, prevented, seen };
}

describe("the skill picker's keys", () => {
  it("moves with the arrows, picks with Enter or Tab, closes with Escape", () => {
    expect(press("ArrowDown")).toEqual({ handled: true, prevented: true, seen: ["move 1"] });
    expect(press("ArrowUp").seen).toEqual(["move 2"]);
    expect(press("Enter", 1).seen).toEqual(["pick diagram"]);
    expect(press("Tab", 2).seen).toEqual(["pick reporter"]);
    expect(press("Escape").seen).toEqual(["close"]);
  });
  it("leaves typing and Shift+Enter to the text box", () => {
    expect(press("a")).toEqual({ handled: false, prevented: false, seen: [] });
    expect(press("Enter", 0, true).handled).toBe(false);
  });
});

describe("the skill picker's list", () => {
  const html = (picked: string[], filter = false) => renderToStaticMarkup(
    <SkillPicker shown={shown} active={1} picked={picked} onPick={() => {}} onHover={() => {}}
      filter={filter ? { value: "d", onChange: () => {}, onKeyDown: () => {} } : undefined} />,
  );
  it("shows each skill's command and first sentence, the highlighted row and the agents", () => {
    const out = html([]);
    expect(out).toContain("<code>/data-analysis</code>");
    expect(out).toContain("Analyze a CSV file<");
    expect(out).not.toContain("Draw charts");
    expect(out).toMatch(/aria-selected="true"[^>]*class="active"[^>]*data-testid="slash-item"><code>\/diagram/);
    expect(out).toContain('<em class="slash-kind">agent</em>');
    expect(out).not.toContain("skill-filter");
  });
  it("marks the picked skills and, opened by its button, has a filter box", () => {
    const out = html(["data-analysis"], true);
    expect(out).toMatch(/aria-checked="true" class="picked"[^>]*><code>\/data-analysis/);
    expect(out).toContain('data-testid="skill-filter"');
    expect((out.match(/aria-checked="true"/g) ?? []).length).toBe(1);
  });
  it("says when nothing matches", () => {
    const out = renderToStaticMarkup(<SkillPicker shown={[]} active={0} picked={[]} onPick={() => {}} onHover={() => {}} />);
    expect(out).toContain("No skill matches.");
  });
});
