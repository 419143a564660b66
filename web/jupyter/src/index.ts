// The JupyterLab side of topos's cards: a mime renderer for application/vnd.topos.card+json
// (what topos.show's cards put in a notebook's output) that draws each card with the
// playground's own drawing (web/src/cards/draw-card.ts). Built by web/scripts/build-labextension.sh
// into the prebuilt extension that the Python package ships.

import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { Widget } from "@lumino/widgets";
import { CARD_MIME_TYPE, drawCard, releaseCards, type AnyCard } from "../../src/cards/draw-card";
import "./cards.css";

/** A plot's width when the output area has not been laid out yet (JupyterLab renders before it attaches). */
const DEFAULT_PLOT_WIDTH = 640;

class CardRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly options: IRenderMime.IRendererOptions) {
    super();
    this.addClass("jp-ToposCard");
    // Says which renderer drew this output (the fallbacks are text/html and image/svg+xml).
    this.node.dataset.mimeType = options.mimeType;
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const card = model.data[this.options.mimeType] as unknown as AnyCard;
    // A card drawn again (an updated display) releases the one it replaces: a plot listens on window until then.
    releaseCards(this.node);
    this.node.replaceChildren(drawCard(card, this.node.clientWidth || DEFAULT_PLOT_WIDTH));
    return Promise.resolve();
  }

  dispose(): void {
    if (!this.isDisposed) releaseCards(this.node);
    super.dispose();
  }
}

const rendererFactory: IRenderMime.IRendererFactory = {
  mimeTypes: [CARD_MIME_TYPE],
  // Cards hold data, never markup: drawing one runs no code of the notebook's, so untrusted outputs draw too.
  safe: true,
  // Below text/html's 50 (and image/svg+xml's 80), so that JupyterLab picks this renderer over the
  // fallback faces that every card also carries.
  defaultRank: 40,
  createRenderer: (options) => new CardRenderer(options),
};

const extension: IRenderMime.IExtension = {
  id: "topos-cards:renderer",
  rendererFactory,
  rank: 40,
  dataType: "json",
};

export default extension;
