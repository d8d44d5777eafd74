// A module imported on first use, for the parts of the UI that stay out of the first script
// (markdown rendering, the pages other than Chat): every caller shares the one import, a failed
// import (the app's files changed under it) is tried again by the next call, and `value` is the
// module once it has arrived, reactive, so a template that reads it renders again then.
export class LazyImport<T> {
  value = $state.raw<T | null>(null);
  #importer: () => Promise<T>;
  #pending: Promise<T> | null = null;

  constructor(importer: () => Promise<T>) {
    this.#importer = importer;
  }

  /** The module, importing it on the first call. */
  load(): Promise<T> {
    this.#pending ??= this.#importer().then(
      (module) => (this.value = module),
      (reason: unknown) => {
        this.#pending = null;
        throw reason;
      },
    );
    return this.#pending;
  }
}
