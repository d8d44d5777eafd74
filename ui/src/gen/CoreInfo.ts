export type CoreInfo = { version: string, data_dir: string, tools: Array<string>, };
