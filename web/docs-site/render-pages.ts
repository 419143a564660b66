// The docs pages of the static site, rendered at build time from the built docs
// (docs/generated/<page>.json, written by docs/tools/build_docs.py, which ran every
// block). vite.config.ts calls `docsPageInputs` when it loads: it writes one HTML
// file a page into web/docs/ (git-ignored) and returns them as build inputs, so the
// site has /docs/<page>.html.
//
// - Prose is the docs' own Markdown, rendered with marked. Links to other pages
//   ("readings.md") become links to their HTML pages.
// - Every live block becomes a figure with the code as text, the output the builder
//   printed (as text: every character escaped, never parsed as HTML), and the embed
//   that makes it live (docs-page.ts swaps the embed in when it is scrolled into view).

import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Marked, type Tokens } from "marked";
import { shareLink } from "../src/share.ts";
import { READING_NAMES } from "../protocol.ts";

interface PagesJson {
  pages: { name: string; title: string; file: string; source: string }[];
}

type Part =
  | { kind: "markdown"; text: string }
  | { kind: "code"; language: string; live: false; code: string }
  | { kind: "code"; language: string; live: true; id: string; example: string | null; code: string; output_text: string; browser?: false };

interface PageJson {
  name: string;
  title: string;
  source: string;
  parts: Part[];
}

/** The tabs of a docs embed: the six readings, then the output drawn (plots and graphs as pictures). */
const EMBED_READINGS = [...READING_NAMES, "output"].join(",");

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** A heading's id: its words in lower case joined by hyphens (what the page links to with #...). */
export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/<[^>]*>/g, "")
    .replace(/[^\p{L}\p{N}]+/gu, "-")
    .replace(/^-|-$/g, "");
}

function markdownRenderer(pageNames: Set<string>): Marked {
  const marked = new Marked({ gfm: true });
  marked.use({
    renderer: {
      heading(this: { parser: { parseInline(tokens: Tokens.Generic[]): string } }, token: Tokens.Heading) {
        const inner = this.parser.parseInline(token.tokens);
        return `<h${token.depth} id="${escapeHtml(slug(token.text))}">${inner}</h${token.depth}>\n`;
      },
      link(this: { parser: { parseInline(tokens: Tokens.Generic[]): string } }, token: Tokens.Link) {
        const inner = this.parser.parseInline(token.tokens);
        const page = /^([\w-]+)\.md(#[\w-]*)?$/.exec(token.href);
        if (page && pageNames.has(page[1])) return `<a href="./${page[1]}.html${page[2] ?? ""}">${inner}</a>`;
        // A file of the repository that is not a page (docs/tools/README.md): named, not linked.
        if (/^[^:]+\.md(#.*)?$/.test(token.href)) return `<span class="docs-file" title="docs/${escapeHtml(token.href)} in the repository">${inner}</span>`;
        return false; // marked's own rendering
      },
    },
  });
  return marked;
}

/** The embed's URL, relative to a docs page: the code in the fragment, in the playground's share format. */
export function embedUrl(id: string, code: string): string {
  // start=now: docs-page.ts creates the embed only when it is scrolled near, and then it should be ready on arrival.
  const query = new URLSearchParams({ id, readings: EMBED_READINGS, show: "none", start: "now" });
  const fragment = new URL(shareLink(code, "https://docs.invalid/embed.html")).hash;
  return `../embed.html?${query}${fragment}`;
}

function renderPart(part: Part, marked: Marked): string {
  if (part.kind === "markdown") return marked.parse(part.text, { async: false }) as string;
  if (!part.live) {
    return `<pre class="docs-static"><code class="language-${escapeHtml(part.language)}">${escapeHtml(part.code)}</code></pre>\n`;
  }
  const output = part.output_text;
  // A block marked nobrowser needs a runtime the browser lacks (jax): no embed, the builder's output stays.
  const embed = part.browser === false ? "" : ` data-embed="${escapeHtml(embedUrl(part.id, part.code))}"`;
  return [
    `<figure class="docs-live" id="${escapeHtml(part.id)}" data-block="${escapeHtml(part.id)}"${embed}>`,
    `<div class="docs-code-host"><pre class="docs-code"><code class="language-python">${escapeHtml(part.code)}</code></pre></div>`,
    `<div class="docs-output" data-output-of="${escapeHtml(part.id)}"${output ? "" : " hidden"}>`,
    `<div class="docs-output-caption">Output</div>`,
    `<pre class="docs-output-text">${escapeHtml(output)}</pre>`,
    `</div>`,
    `</figure>\n`,
  ].join("");
}

function renderPage(page: PageJson, pages: PagesJson["pages"], marked: Marked): string {
  const at = pages.findIndex((entry) => entry.name === page.name);
  const nav = pages
    .map((entry) => {
      const current = entry.name === page.name ? ' aria-current="page"' : "";
      return `<li><a href="./${entry.name}.html"${current}>${escapeHtml(entry.title)}</a></li>`;
    })
    .join("\n");
  const previous = pages[at - 1];
  const next = pages[at + 1];
  const pager = [
    previous ? `<a class="docs-previous" href="./${previous.name}.html">← ${escapeHtml(previous.title)}</a>` : "<span></span>",
    next ? `<a class="docs-next" href="./${next.name}.html">${escapeHtml(next.title)} →</a>` : "<span></span>",
  ].join("\n");
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="color-scheme" content="light dark" />
    <title>${escapeHtml(page.title)} · topos docs</title>
  </head>
  <!-- Generated from ${escapeHtml(`docs/generated/${page.name}.json`)} by web/docs-site/render-pages.ts: edit ${escapeHtml(page.source)} and rebuild. -->
  <body class="docs" data-page="${escapeHtml(page.name)}">
    <header class="docs-header"><a class="docs-home" href="./index.html">topos docs</a><a class="docs-playground" href="../">open the playground</a></header>
    <div class="docs-layout">
      <nav class="docs-nav" aria-label="Pages"><ol>
${nav}
      </ol></nav>
      <main class="docs-main">
${page.parts.map((part) => renderPart(part, marked)).join("\n")}
        <nav class="docs-pager" aria-label="Previous and next page">${pager}</nav>
      </main>
    </div>
    <script type="module" src="../docs-site/docs-page.ts"></script>
  </body>
</html>
`;
}

/**
 * Render every page listed in docs/generated/pages.json into web/docs/<name>.html and
 * return them as build inputs, "docs/<name>" -> path. A file is written only when its
 * text changed, and only pages no longer listed are removed, so that two builds at
 * once (the offline app's tests build twice) never see a page missing.
 */
export function docsPageInputs(root: string): Record<string, string> {
  const generated = join(root, "docs", "generated");
  const out = join(root, "web", "docs");
  const { pages } = JSON.parse(readFileSync(join(generated, "pages.json"), "utf8")) as PagesJson;
  const marked = markdownRenderer(new Set(pages.map((page) => page.name)));
  mkdirSync(out, { recursive: true });
  const inputs: Record<string, string> = {};
  for (const entry of pages) {
    const page = JSON.parse(readFileSync(join(generated, entry.file), "utf8")) as PageJson;
    const path = join(out, `${entry.name}.html`);
    const html = renderPage(page, pages, marked);
    if (!existsSync(path) || readFileSync(path, "utf8") !== html) {
      // Written aside and renamed: a build reading the page at that moment sees the old text or the new.
      writeFileSync(`${path}.${process.pid}.tmp`, html);
      renameSync(`${path}.${process.pid}.tmp`, path);
    }
    inputs[`docs/${entry.name}`] = path;
  }
  const listed = new Set(pages.map((entry) => `${entry.name}.html`));
  for (const file of readdirSync(out)) if (file.endsWith(".html") && !listed.has(file)) rmSync(join(out, file));
  return inputs;
}
