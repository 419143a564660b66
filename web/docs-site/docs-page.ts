// A docs page in the browser. The HTML (rendered at build time by render-pages.ts)
// already shows every block's code and the output the docs builder printed; this
// script makes the blocks live:
//
// - a block's embed (embed.html) is put in place of its code when the block is
//   first scrolled near the viewport, so a page with ten examples loads one or two
//   embeds at first, and all of them share one Python (web/embed/shared-python.ts);
// - the embed reports its height, and the iframe takes it;
// - the embed reports each run: while the code is the block's own, the built output
//   stays, marked "reproduced" when this browser's run printed the same (by the rule of
//   output-agreement.ts: numbers to their last printed digit, as on another CPU); once
//   the reader edits the code, the output shown is the edit's (as text), with a
//   button that puts the block's code back.

import "../src/style.css";
import "./docs.css";
import type { EmbedMessage } from "../embed/messages";
import { outputsAgree } from "./output-agreement";

/** How far below the viewport an embed starts loading, so that it is ready when it arrives. */
const PRELOAD_MARGIN = "300px 0px";
/** The embed's tab bar under its code, before the embed has reported its real height. */
const EMBED_CHROME_HEIGHT = 36;

interface Block {
  figure: HTMLElement;
  id: string;
  code: string;
  builtOutput: string;
  output: HTMLElement;
  outputText: HTMLPreElement;
  caption: HTMLElement;
  iframe: HTMLIFrameElement | null;
}

const blocks = new Map<string, Block>();
for (const figure of document.querySelectorAll<HTMLElement>("figure.docs-live")) {
  const output = figure.querySelector<HTMLElement>(".docs-output")!;
  const block: Block = {
    figure,
    id: figure.dataset.block!,
    code: figure.querySelector(".docs-code")!.textContent ?? "",
    builtOutput: output.querySelector(".docs-output-text")!.textContent ?? "",
    output,
    outputText: output.querySelector<HTMLPreElement>(".docs-output-text")!,
    caption: output.querySelector<HTMLElement>(".docs-output-caption")!,
    iframe: null,
  };
  blocks.set(block.id, block);
}

function goLive(block: Block): void {
  if (block.iframe) return;
  const codeView = block.figure.querySelector<HTMLElement>(".docs-code")!;
  const url = new URL(block.figure.dataset.embed!, window.location.href);
  url.searchParams.set("origins", window.location.origin);
  const iframe = document.createElement("iframe");
  iframe.className = "docs-embed";
  iframe.title = `Live code of ${block.id}: edit it, and read what it records`;
  iframe.style.height = `${codeView.offsetHeight + EMBED_CHROME_HEIGHT}px`;
  iframe.src = url.href;
  block.iframe = iframe;
  // The static code stays in the page (hidden): it is what a reader without scripts sees.
  codeView.hidden = true;
  codeView.after(iframe);
  block.figure.dataset.live = "loading";
}

const observer = new IntersectionObserver(
  (entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      observer.unobserve(entry.target);
      goLive(blocks.get((entry.target as HTMLElement).dataset.block!)!);
    }
  },
  { rootMargin: PRELOAD_MARGIN },
);
// A figure without an embed (a nobrowser block) keeps its code and the builder's output.
for (const block of blocks.values()) if (block.figure.dataset.embed) observer.observe(block.figure);

// The embeds' messages ---------------------------------------------------------------------------

function blockOf(source: MessageEventSource | null): Block | undefined {
  for (const block of blocks.values()) if (block.iframe && block.iframe.contentWindow === source) return block;
  return undefined;
}

function showOutput(block: Block, text: string, caption: string, state: string): void {
  block.outputText.textContent = text; // text only: program output is never parsed as HTML
  block.caption.replaceChildren(caption);
  block.output.hidden = text === "" && state === "built";
  block.output.dataset.state = state;
}

function restoreButton(block: Block): HTMLButtonElement {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "docs-restore";
  button.textContent = "put the example's code back";
  button.addEventListener("click", () => {
    block.iframe?.contentWindow?.postMessage({ type: "topos:set-code", code: block.code }, window.location.origin);
  });
  return button;
}

window.addEventListener("message", (event: MessageEvent<EmbedMessage>) => {
  if (event.origin !== window.location.origin) return;
  const block = blockOf(event.source);
  if (!block) return;
  const message = event.data;
  switch (message.type) {
    case "topos:height":
      block.iframe!.style.height = `${message.height}px`;
      break;
    case "topos:readings-changed": {
      block.figure.dataset.live = message.status;
      if (message.code === block.code) {
        const reproduced = message.status === "ok" && outputsAgree(block.builtOutput, message.outputText);
        block.figure.dataset.reproduced = message.status === "ok" ? String(reproduced) : "";
        showOutput(block, block.builtOutput, "Output", "built");
        if (reproduced) block.caption.append(" ", Object.assign(document.createElement("span"), {
          className: "docs-reproduced",
          textContent: "✓ reproduced in your browser",
        }));
      } else if (message.status === "ok") {
        showOutput(block, message.outputText || "(nothing printed)", "Output of your edit ", "edited");
        block.caption.append(restoreButton(block));
      } else if (message.status === "error" && message.error) {
        const { type, line, message: text } = message.error;
        showOutput(block, `${type} on line ${line ?? "?"}: ${text}`, "Your edit raised ", "error");
        block.caption.append(restoreButton(block));
      } else if (message.status === "stopped") {
        showOutput(block, message.stopped ?? "stopped", "Your edit was stopped ", "error");
        block.caption.append(restoreButton(block));
      }
      break;
    }
  }
});
