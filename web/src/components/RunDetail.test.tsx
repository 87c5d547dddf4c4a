import { describe, expect, it } from "vitest";
import { estimateText } from "./RunDetail";

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
