import { z } from 'zod';
import type { Api } from './api.js';

/** What a tool's run gets besides its arguments. */
export interface ToolCall {
  api: Api;
  /** The workspace of the call: `workspace_id`, else the connection's default, else the key's claim; else a tool error. */
  workspace(argument: string | undefined): string;
  /** Aborted when the client goes away (a chat's model calls stop). */
  signal: AbortSignal;
}

/** A tool's success: text for the model, and the same as data matching its output schema. */
export interface ToolAnswer {
  text: string;
  data: Record<string, unknown>;
}

/**
 * One tool, declared once: name, input and output schemas, the prefix of its errors, and its
 * run. The scope rule of each route it calls is declared in api.ts and checked there.
 */
export interface ToolSpec<I extends z.ZodRawShape = z.ZodRawShape, O extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  /** The error text's prefix (`<failure>: <the API's message>`). */
  failure: string;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  run(args: z.infer<z.ZodObject<I>>, call: ToolCall): Promise<ToolAnswer>;
}

/** Declares a tool with its argument types inferred from its input schema. */
export function tool<I extends z.ZodRawShape, O extends z.ZodRawShape>(spec: ToolSpec<I, O>): ToolSpec {
  return spec as unknown as ToolSpec;
}

/** A refusal of the MCP layer itself (no workspace given), said as a tool error. */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}

/** Compact JSON, as tool texts give objects (keys with undefined values left out). */
export function json(value: unknown): string {
  return JSON.stringify(value);
}
