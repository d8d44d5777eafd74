export type UiError = { code: string, message: string, };
