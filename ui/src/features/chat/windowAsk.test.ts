import { describe, expect, it } from "vitest";
import type { WindowSnapshot } from "../../gen";
import { defaultQuestion, messageWithSnapshot, windowName } from "./windowAsk";

const snapshot: WindowSnapshot = {
  snapshot_id: "s4",
  title: "Invoice.pdf - Viewer",
  app: "evince",
  image: "data:image/png;base64,AAAA",
  width: 800,
  height: 600,
  elements: "window Invoice.pdf\nB1 button \"Print\"",
};

describe("asking about a window", () => {
  it("names the window by title, else app, else the screen", () => {
    expect(windowName(snapshot)).toBe("“Invoice.pdf - Viewer”");
    expect(windowName({ ...snapshot, title: " " })).toBe("a window of evince");
    expect(windowName({ ...snapshot, title: null, app: null })).toBe("the screen");
    expect(defaultQuestion(snapshot)).toContain("Invoice.pdf");
  });

  it("sends the question with the snapshot id and its elements", () => {
    const text = messageWithSnapshot("How do I print this?", snapshot);
    expect(text.startsWith("How do I print this?\n")).toBe(true);
    expect(text).toContain("snapshot s4");
    expect(text).toContain('B1 button "Print"');
    expect(messageWithSnapshot("  ", snapshot).startsWith("What can you tell me")).toBe(true);
  });
});
