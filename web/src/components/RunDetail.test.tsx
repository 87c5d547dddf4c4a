import { describe, expect, it } from "vitest";
import { doingText, estimateText } from "./RunDetail";

describe("the step estimate", () => {
  it("says the median, how many steps it comes from and the pace when known", () => {
    expect(estimateText({ model: "local", samples: 8, seconds: 41.6, output_tokens_per_second: 9.04 }))
      .toBe("about 41 s per step here, estimated from the last 8, 9 tokens/s");
    expect(estimateText({ model: "lead", samples: 2, seconds: 0.2, output_tokens_per_second: null }))
      .toBe("about 1 s per step here, estimated from the last 2");
    expect(estimateText({ model: "local", samples: 3, seconds: 95, output_tokens_per_second: null }))
      .toMatch(/^about 1 m.* per step here/);
  });

  it("says when nothing was measured yet", () => {
    expect(estimateText({ model: "lead", samples: 0, seconds: null, output_tokens_per_second: null })).toBe("no model step measured yet on this machine");
    expect(estimateText(null)).toBe("no model step measured yet on this machine");
  });
});

describe("the line while a run works", () => {
  it("says what runs and for how long, in the thread's language", () => {
    const running = { step: 2, kind: "running" as const, what: "bash python3 plot.py" };
    expect(doingText(running, "12 s")).toBe("running bash python3 plot.py · 12 s");
    expect(doingText(running, "12 s", "zh")).toBe("正在运行 bash python3 plot.py · 12 s");
    expect(doingText({ step: 1, kind: "thinking", what: "" }, "3 s", "zh")).toBe("模型思考中 · 3 s");
    expect(estimateText({ model: "local", samples: 8, seconds: 41.6, output_tokens_per_second: 9.04 }, "zh"))
      .toBe("本机每步约 41 s，根据最近 8 步估计，每秒 9 个 token");
  });
});
