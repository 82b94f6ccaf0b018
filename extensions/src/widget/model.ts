// The part of anywidget's model object this package uses (see PROTOCOL.md for the traits).
export type Handler = (...args: any[]) => void;

export interface WidgetModel {
  get(name: string): unknown;
  on(event: string, fn: Handler): void;
  off(event?: string | null, fn?: Handler | null): void;
  send(content: object, callbacks?: unknown, buffers?: ArrayBuffer[] | ArrayBufferView[]): void;
}
