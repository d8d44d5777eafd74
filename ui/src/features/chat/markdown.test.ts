import { describe, expect, it } from "vitest";
import { highlightCode, renderMarkdown } from "./markdown";
import { isOpenableLink } from "./links";

/** The text between `<code…>` and `</code>` of each code block, highlighting spans removed and
 * entities decoded. */
function codeBlocks(html: string): string[] {
  return [...html.matchAll(/<pre><code[^>]*>([\s\S]*?)<\/code><\/pre>/g)].map((m) =>
    m[1]
      .replace(/<span class="(?:hljs|language)-[a-z_ .-]+">|<\/span>/g, "")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&quot;/g, '"')
      .replace(/&#39;|&#x27;/g, "'")
      .replace(/&amp;/g, "&"),
  );
}

describe("renderMarkdown", () => {
  it("never turns raw HTML from the model into live elements", () => {
    const html = renderMarkdown(
      'Hi <script>alert(1)</script>\n\n<img src=x onerror="alert(2)">\n\n<a href="javascript:alert(3)">x</a>\n\n<iframe src="https://evil"></iframe>',
    );
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<img/i);
    expect(html).not.toMatch(/<iframe/i);
    expect(html).not.toMatch(/<a href="javascript/i);
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("&lt;img src=x onerror=");
  });

  it("drops javascript:, vbscript: and data: links but keeps web links", () => {
    const html = renderMarkdown(
      "[a](javascript:alert(1)) [b](JavaScript:alert(1)) [c](vbscript:x) [d](data:text/html;base64,PHNjcmlwdD4=) [e](https://example.com/x?a=1&b=2)",
    );
    expect(html).not.toMatch(/href="(javascript|vbscript|data):/i);
    expect(html).toContain('href="https://example.com/x?a=1&amp;b=2"');
    expect(html).toContain('data-external="true"');
    // Images are never loaded from a reply; a web image becomes a link to it.
    expect(renderMarkdown("![x](javascript:alert(1))")).not.toMatch(/<img|href="javascript/i);
    const image = renderMarkdown("![chart](https://example.com/c.png?secret=1)");
    expect(image).not.toMatch(/<img/i);
    expect(image).toContain('<a href="https://example.com/c.png?secret=1"');
  });

  it("keeps a code block's text exactly, with its language and a copy button", () => {
    const code = 'fn main() {\n    let s = "<b>&amp;</b>";\n\tprintln!("{s}");  \n}\n';
    const html = renderMarkdown("Here:\n\n```rust\n" + code + "```\n");
    expect(codeBlocks(html)).toEqual([code]);
    expect(html).toContain('<span class="code-lang">rust</span>');
    expect(html).toContain('data-testid="code-copy"');
    expect(html).toContain('class="hljs language-rust"');
  });

  it("colours the common languages and leaves unknown ones plain", () => {
    for (const [lang, code] of [
      ["rust", "fn main() { let x = 1; }"],
      ["ts", "const x: number = 1;"],
      ["js", "let x = 'a';"],
      ["python", "def f():\n    return 1"],
      ["bash", "echo $HOME"],
      ["sh", "if true; then echo hi; fi"],
      ["json", '{"a": 1}'],
      ["toml", '[a]\nb = "c"'],
      ["yaml", "a: b"],
      ["html", "<p>hi</p>"],
      ["css", "a { color: red; }"],
      ["sql", "SELECT 1 FROM t"],
      ["go", "func main() {}"],
      ["c", "int main(void) { return 0; }"],
      ["cpp", "int main() { return 0; }"],
      ["diff", "-a\n+b"],
    ]) {
      const html = renderMarkdown("```" + lang + "\n" + code + "\n```\n");
      expect(html, lang).toMatch(/<span class="hljs-/);
      expect(codeBlocks(html), lang).toEqual([code + "\n"]);
    }
    const unknown = renderMarkdown("```brainfuck\n<b>+[-]</b>\n```\n");
    expect(unknown).not.toMatch(/hljs/);
    expect(unknown).toContain("&lt;b&gt;+[-]&lt;/b&gt;");
    expect(highlightCode("x", "")).toBeNull();
    expect(highlightCode("x", "no-such-language")).toBeNull();
  });

  it("keeps a hostile code block inert when it is highlighted", () => {
    const hostile =
      '</code></pre><script>alert(1)</script><img src=x onerror="alert(2)">\n' +
      '"</span><iframe src=javascript:alert(3)>\n<!-- --><svg onload=alert(4)>';
    for (const lang of ["html", "xml", "js", "rust", "bash", "markdown", ""]) {
      const html = renderMarkdown("```" + lang + "\n" + hostile + "\n```\n");
      expect(html, lang).not.toMatch(/<(script|img|iframe|svg)/i);
      expect(html, lang).not.toMatch(/<\/code><\/pre><script/i);
      // Only hljs's own spans are markup inside the block; the code reads back exactly.
      expect(codeBlocks(html), lang).toEqual([hostile + "\n"]);
      const inner = html.match(/<pre><code[^>]*>([\s\S]*?)<\/code><\/pre>/)?.[1] ?? "";
      expect(inner.replace(/<span class="(?:hljs|language)-[a-z_ .-]+">|<\/span>/g, ""), lang).not.toMatch(/[<>]/);
    }
  });

  it("escapes a hostile language name", () => {
    const html = renderMarkdown('```"><script>x</script>\nbody\n```');
    expect(html).not.toMatch(/<script/i);
    expect(codeBlocks(html)).toEqual(["body\n"]);
  });

  it("renders half-finished markdown while it streams", () => {
    // An unclosed fence is a code block to the end.
    const open = renderMarkdown("Try this:\n\n```sh\nls -la\nec");
    expect(codeBlocks(open)).toEqual(["ls -la\nec"]);
    // An unclosed emphasis stays literal text.
    expect(renderMarkdown("this is **bo")).toContain("**bo");
    // A table's header without its body yet is still text, not an error.
    expect(() => renderMarkdown("| a | b |\n|---")).not.toThrow();
  });

  it("renders lists, tables, headings and inline code", () => {
    const html = renderMarkdown(
      "# Title\n\n- one\n- `two`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
    );
    expect(html).toContain("<h1>Title</h1>");
    expect(html).toContain("<li><code>two</code></li>");
    expect(html).toContain('<div class="table-wrap"><table>');
    expect(html).toContain("<td>1</td>");
  });
});

describe("isOpenableLink", () => {
  it("accepts web and mail links only", () => {
    expect(isOpenableLink("https://example.com")).toBe(true);
    expect(isOpenableLink("http://example.com")).toBe(true);
    expect(isOpenableLink("mailto:a@example.com")).toBe(true);
    expect(isOpenableLink("javascript:alert(1)")).toBe(false);
    expect(isOpenableLink("file:///etc/passwd")).toBe(false);
    expect(isOpenableLink("#/settings")).toBe(false);
    expect(isOpenableLink(null)).toBe(false);
  });
});
