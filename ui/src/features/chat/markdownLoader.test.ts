import { describe, expect, it, vi } from "vitest";
import { loadMarkdown, markdown, startLoadingAfterPaint } from "./markdownLoader.svelte";

describe("markdownLoader", () => {
  it("loads the renderer only after a frame, once for every caller", async () => {
    const frames: FrameRequestCallback[] = [];
    vi.stubGlobal("requestAnimationFrame", (callback: FrameRequestCallback) => frames.push(callback));
    try {
      expect(markdown()).toBeNull();
      startLoadingAfterPaint();
      // Nothing starts before the frame has been drawn.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(markdown()).toBeNull();
      expect(frames).toHaveLength(1);
      frames[0](0);
      await vi.waitFor(() => expect(markdown()).not.toBeNull(), { timeout: 5000 });
      const module = await loadMarkdown();
      expect(loadMarkdown()).toBe(loadMarkdown());
      expect(markdown()).toBe(module);
      expect(module.renderMarkdown("**bold**")).toContain("<strong>bold</strong>");
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
