// The Files panel: the user's own files in (dropped anywhere on the page, or picked), the files
// a run writes out, and the script itself as a .py file or a Jupyter notebook.
//
// - The user's files are kept in IndexedDB (store.ts) until removed, and handed to both Python
//   workers, whose every run starts in a working directory holding exactly them, as stored
//   (topos.playground.files): a run changes only its own copy.
// - What a run writes there (new files, and the user's files it changed) is listed in two
//   groups, as the output pane has two: the last Run's, and the last edit's readings run's.
//   Each can be downloaded, or kept as one of the user's files (so that later runs read it).
// - Nothing leaves the browser: downloads are blob: links made on the page.

import "./files.css";
import type { FileBytes } from "../../protocol";
import { examples } from "../gallery";
import { MAX_TOTAL_BYTES, megabytes, refusal, removeStoredFile, storedFiles, storeFile, type StoredFile } from "./store";

/** What the panel needs from the page. */
export interface FilesHost {
  /** The code in the editor. */
  code(): string;
  /** The user's files changed (or were loaded): both workers get the new set, and the readings run again. */
  changed(files: FileBytes[]): void;
  /** The code as a notebook's JSON text (made by Python: topos.playground.notebook). */
  notebook(code: string, title: string | null): Promise<string>;
}

/** Which run wrote a list of files: the last Run, or the readings run of the last edit. */
export type WrittenBy = "run" | "typing";

const ACCEPTED = ".csv,.npy,.npz,.safetensors,.txt,.json";

function make<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

function button(text: string, title: string, onClick: () => void): HTMLButtonElement {
  const element = make("button", undefined, text);
  element.type = "button";
  element.title = title;
  element.addEventListener("click", onClick);
  return element;
}

/** The parameters file that an optimizer state file belongs to, by the name `state.save` is given beside
 * `parameters.save`'s (docs/training.md, "Resuming"): `model.state.safetensors` for `model.safetensors`. */
export function parametersOfState(name: string): string | null {
  return name.endsWith(".state.safetensors") ? name.slice(0, -".state.safetensors".length) + ".safetensors" : null;
}

/** The files in their order, except that an optimizer state whose parameters are listed too comes right
 * after them: the two are what a resumed run loads, so they are offered side by side. */
export function statesBesideParameters<F extends { name: string }>(files: F[]): F[] {
  const names = new Set(files.map((file) => file.name));
  const paired = (file: F) => names.has(parametersOfState(file.name) ?? "");
  const ordered: F[] = [];
  for (const file of files) {
    if (paired(file)) continue;
    ordered.push(file, ...files.filter((state) => paired(state) && parametersOfState(state.name) === file.name));
  }
  return ordered;
}

/** Save `bytes` as a download named `name` (the last part of a path: a browser saves no folders). */
function download(name: string, bytes: BlobPart, type = "application/octet-stream"): void {
  const link = make("a");
  link.href = URL.createObjectURL(new Blob([bytes], { type }));
  link.download = name.split("/").pop() ?? name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

export class FilesPanel {
  readonly element = make("aside", "files-panel");
  private readonly toggle: HTMLButtonElement;
  private readonly message = make("p", "files-message");
  private readonly lists: Record<"yours" | WrittenBy, HTMLUListElement>;
  private readonly usage = make("span", "files-usage");
  private readonly picker = make("input");
  private readonly overlay = make("div", "files-drop", "Drop to add to the script's folder");
  private stored: StoredFile[] = [];
  private readonly written: Record<WrittenBy, FileBytes[]> = { run: [], typing: [] };

  constructor(
    private readonly host: FilesHost,
    toggle: HTMLButtonElement,
    /** What the panel opens below, never over: the reading tabs, which stay in sight and can be clicked. */
    private readonly below: HTMLElement | null = null,
  ) {
    this.toggle = toggle;
    this.element.id = "files-panel";
    this.element.hidden = true;
    this.element.setAttribute("aria-label", "Files");
    this.picker.type = "file";
    this.picker.multiple = true;
    this.picker.accept = ACCEPTED;
    this.picker.hidden = true;
    this.picker.addEventListener("change", () => {
      void this.add([...(this.picker.files ?? [])]);
      this.picker.value = "";
    });
    const head = make("header");
    head.append(make("h2", undefined, "Files"), button("×", "Close the files panel", () => this.show(false)));
    const about = make(
      "p",
      "files-about",
      "Every run starts in a folder that holds your files, as stored: read them with open() or numpy. " +
        "They stay in this browser (IndexedDB) until you remove them, and are never sent anywhere.",
    );
    const add = make("div", "files-add");
    add.append(button("Add files…", "Pick files to add", () => this.picker.click()), make("span", undefined, "or drop them on the page"), this.picker);
    this.lists = { yours: make("ul"), run: make("ul"), typing: make("ul") };
    const yours = this.section("Your files", this.lists.yours, "yours");
    yours.querySelector("h3")!.append(" ", this.usage);
    const script = this.section("The script", null, "script");
    script.append(
      button("Download .py", "Download the script as a Python file", () => download(`${this.scriptName()}.py`, this.host.code(), "text/x-python")),
      button("Download .ipynb", "Download the script as a Jupyter notebook", () => void this.exportNotebook()),
    );
    this.message.setAttribute("role", "status");
    this.element.append(
      head,
      about,
      add,
      yours,
      this.section("Written by the last run", this.lists.run, "run"),
      this.section("Written as you type", this.lists.typing, "typing"),
      script,
      this.message,
    );
    document.body.append(this.element, this.overlay);
    this.toggle.addEventListener("click", () => this.show(this.element.hidden));
    // The toolbar wraps, and the tabs move, as the window changes size: an open panel follows them.
    window.addEventListener("resize", () => {
      if (!this.element.hidden) this.place();
    });
    this.element.addEventListener("keydown", (event) => {
      if (event.key !== "Escape") return;
      this.show(false);
      this.toggle.focus();
    });
    this.listenForDrops();
    this.render();
  }

  /** Load the stored files and hand them to the workers. */
  async load(): Promise<void> {
    try {
      this.stored = await storedFiles();
    } catch (error) {
      this.say(`Your files could not be read from this browser's storage: ${(error as Error).message}`);
    }
    this.render();
    if (this.stored.length) this.host.changed(this.fileBytes());
  }

  /** The files a run wrote (the last Run's, or the last edit's readings run's). */
  showWritten(by: WrittenBy, files: FileBytes[]): void {
    const before = this.written[by];
    this.written[by] = files;
    if (before.length || files.length) this.render();
  }

  show(open: boolean): void {
    this.element.hidden = !open;
    this.toggle.setAttribute("aria-expanded", String(open));
    if (open) this.place();
  }

  /** Under the toolbar and under the reading tabs, down to the window's bottom (it scrolls within). */
  private place(): void {
    const toolbar = this.toggle.closest("header")?.getBoundingClientRect().bottom ?? 44;
    const tabs = this.below?.getBoundingClientRect().bottom ?? 0;
    const top = Math.round(Math.max(toolbar, tabs)) + 4;
    this.element.style.top = `${top}px`;
    this.element.style.maxHeight = `calc(100dvh - ${top + 12}px)`;
  }

  /** Add files (a file of the same name is replaced), within the limits. */
  async add(files: File[]): Promise<void> {
    if (!files.length) return;
    this.show(true);
    const problem = refusal(this.sizes(this.stored), files);
    if (problem) return this.say(`Not added: ${problem}.`);
    try {
      for (const file of files) {
        await storeFile({ name: file.name, bytes: await file.arrayBuffer(), added: Date.now() });
      }
      this.stored = await storedFiles();
    } catch (error) {
      return this.say(`Not added: this browser's storage refused it (${(error as Error).message}).`);
    }
    this.say(`Added ${files.map((file) => file.name).join(", ")}.`);
    this.changed();
  }

  private async remove(name: string): Promise<void> {
    await removeStoredFile(name);
    this.stored = this.stored.filter((file) => file.name !== name);
    this.say(`Removed ${name}.`);
    this.changed();
  }

  /** A written file kept as one of the user's files, under its own name (without the folder). */
  private async keep(file: FileBytes): Promise<void> {
    const name = file.name.split("/").pop()!;
    const bytes = file.bytes.slice().buffer as ArrayBuffer;
    const problem = refusal(this.sizes(this.stored), [{ name, size: bytes.byteLength }]);
    if (problem) return this.say(`Not kept: ${problem}.`);
    await storeFile({ name, bytes, added: Date.now() });
    this.stored = await storedFiles();
    this.say(`Kept ${name} with your files: every run from now on reads it.`);
    this.changed();
  }

  /** A parameters file and its optimizer state, kept together (a resumed run needs both). */
  private async keepBoth(parameters: FileBytes, state: FileBytes): Promise<void> {
    const names = [parameters, state].map((file) => file.name.split("/").pop()!);
    const problem = refusal(this.sizes(this.stored.filter((file) => !names.includes(file.name))), [
      { name: names[0], size: parameters.bytes.byteLength },
      { name: names[1], size: state.bytes.byteLength },
    ]);
    if (problem) return this.say(`Not kept: ${problem}.`);
    for (const [name, file] of [
      [names[0], parameters],
      [names[1], state],
    ] as const) {
      await storeFile({ name, bytes: file.bytes.slice().buffer as ArrayBuffer, added: Date.now() });
    }
    this.stored = await storedFiles();
    this.say(`Kept ${names.join(" and ")} with your files: a run can load both and resume where this one stopped.`);
    this.changed();
  }

  private changed(): void {
    this.render();
    this.host.changed(this.fileBytes());
  }

  private fileBytes(): FileBytes[] {
    return this.stored.map((file) => ({ name: file.name, bytes: new Uint8Array(file.bytes) }));
  }

  private sizes(files: StoredFile[]): { name: string; size: number }[] {
    return files.map((file) => ({ name: file.name, size: file.bytes.byteLength }));
  }

  private async exportNotebook(): Promise<void> {
    const code = this.host.code();
    const example = examples.find((e) => e.code === code);
    try {
      const text = await this.host.notebook(code, example?.title ?? null);
      download(`${this.scriptName()}.ipynb`, text, "application/x-ipynb+json");
    } catch (error) {
      this.say(`The notebook could not be made: ${(error as Error).message}`);
    }
  }

  /** The download's name: the example's file name while the editor holds an example, else main. */
  private scriptName(): string {
    const code = this.host.code();
    return examples.find((example) => example.code === code)?.file.replace(/\.py$/, "") ?? "main";
  }

  private say(text: string): void {
    this.message.textContent = text;
  }

  private section(title: string, list: HTMLUListElement | null, name: string): HTMLElement {
    const section = make("section");
    section.dataset.files = name;
    section.append(make("h3", undefined, title));
    if (list) section.append(list);
    return section;
  }

  private render(): void {
    const total = this.stored.reduce((sum, file) => sum + file.bytes.byteLength, 0);
    this.usage.textContent = `${megabytes(total)} of ${megabytes(MAX_TOTAL_BYTES)}`;
    this.toggle.textContent = this.stored.length ? `Files (${this.stored.length})` : "Files";
    this.fill(this.lists.yours, this.stored.map((file) => ({ name: file.name, bytes: new Uint8Array(file.bytes) })), "none yet", (file) => [
      button("Remove", `Remove ${file.name} from your files`, () => void this.remove(file.name)),
    ]);
    for (const by of ["run", "typing"] as const) {
      const written = this.written[by];
      this.fill(this.lists[by], written, by === "run" ? "nothing (or no run yet)" : "nothing", (file) => {
        const actions = [button("Keep", `Keep ${file.name} with your files, for every run to read`, () => void this.keep(file))];
        const state = written.find((other) => parametersOfState(other.name) === file.name);
        if (state) {
          const both = `Keep ${file.name} and its optimizer state ${state.name}: a run loads both to resume training`;
          actions.push(button("Keep both", both, () => void this.keepBoth(file, state)));
        }
        return actions;
      });
    }
  }

  private fill(list: HTMLUListElement, files: FileBytes[], none: string, actions: (file: FileBytes) => HTMLButtonElement[]): void {
    const names = new Set(files.map((file) => file.name));
    list.replaceChildren(
      ...(files.length
        ? statesBesideParameters(files).map((file) => {
            const item = make("li");
            item.dataset.file = file.name;
            const parameters = parametersOfState(file.name);
            const name = make("span", "files-name", file.name);
            if (parameters !== null && names.has(parameters)) {
              // Beside its parameters: say what it is and how a run resumes from it.
              item.dataset.stateOf = parameters;
              item.classList.add("files-state");
              name.append(make("span", "files-note", `the optimizer's state of ${parameters.split("/").pop()}`));
              name.title = "optimizer.load_state(path, parameters) resumes the run (docs/training.md, Resuming)";
            }
            item.append(
              name,
              make("span", "files-size", megabytes(file.bytes.byteLength)),
              button("Download", `Download ${file.name}`, () => download(file.name, file.bytes.slice())),
              ...actions(file),
            );
            return item;
          })
        : [make("li", "files-none", none)]),
    );
  }

  /** Files dragged over the page show where they go; dropped anywhere (the editor too), they are added. */
  private listenForDrops(): void {
    const carriesFiles = (event: DragEvent) => event.dataTransfer?.types.includes("Files") ?? false;
    let depth = 0;
    const over = (shown: boolean) => (this.overlay.dataset.shown = String(shown));
    window.addEventListener(
      "dragenter",
      (event) => {
        if (!carriesFiles(event)) return;
        depth++;
        over(true);
      },
      true,
    );
    window.addEventListener(
      "dragleave",
      (event) => {
        if (!carriesFiles(event)) return;
        depth = Math.max(0, depth - 1);
        if (depth === 0) over(false);
      },
      true,
    );
    window.addEventListener(
      "dragover",
      (event) => {
        if (!carriesFiles(event)) return;
        event.preventDefault();
        event.dataTransfer!.dropEffect = "copy";
      },
      true,
    );
    window.addEventListener(
      "drop",
      (event) => {
        if (!carriesFiles(event)) return;
        // Taken before the editor sees it: Monaco would otherwise insert the file's text or name.
        event.preventDefault();
        event.stopPropagation();
        depth = 0;
        over(false);
        void this.add([...(event.dataTransfer?.files ?? [])]);
      },
      true,
    );
  }
}
