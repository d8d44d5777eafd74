import { describe, expect, it, vi } from "vitest";
import { loadMarkdown, markdown, markdownWanted, preloadMarkdown } from "./markdownLoader.svelte";

describe("markdownLoader", () => {
  it("is wanted once a message is being written or the transcript has anything", () => {
    expect(markdownWanted("", 0)).toBe(false);
    expect(markdownWanted("h", 0)).toBe(true);
    // Whitespace is a message being written too: the person has started.
    expect(markdownWanted(" ", 0)).toBe(true);
    expect(markdownWanted("", 1)).toBe(true);
  });

  it("loads the renderer only when asked, after a frame, once for every caller", async () => {
    const frames: FrameRequestCallback[] = [];
    vi.stubGlobal("requestAnimationFrame", (callback: FrameRequestCallback) => frames.push(callback));
    try {
      // Nothing loads until something asks for it.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(markdown()).toBeNull();
      preloadMarkdown();
      preloadMarkdown();
      // Nothing starts before the frame has been drawn, and asking twice waits for one frame.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(markdown()).toBeNull();
      expect(frames).toHaveLength(1);
      frames[0](0);
      await vi.waitFor(() => expect(markdown()).not.toBeNull(), { timeout: 5000 });
      const module = await loadMarkdown();
      expect(loadMarkdown()).toBe(loadMarkdown());
      expect(markdown()).toBe(module);
      expect(module.renderMarkdown("**bold**")).toContain("<strong>bold</strong>");
      preloadMarkdown();
      expect(frames).toHaveLength(1);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
