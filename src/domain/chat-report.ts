import type { Usage } from '../llm/provider.js';

/* What a chat reports when it is done (docs/reasoning.md, Chat): read by the log and the metrics. */

/** A chat's reasoning level. */
export type ReasoningLevel = 'minimal' | 'low' | 'medium' | 'high' | 'max';

/** What one chat used, for the log and the metrics. */
export interface ChatReport {
  workspaceId: string;
  level: ReasoningLevel;
  model: string;
  stream: boolean;
  outcome: 'ok' | 'model_error' | 'invalid_answer' | 'aborted' | 'error';
  toolCalls: ToolCallRecord[];
  usage: Usage;
  modelCalls: number;
  durationMs: number;
  /** Why it failed, when it did. */
  error?: string;
}

/** One tool call the model made, as run. */
export interface ToolCallRecord {
  name: string;
  /** The arguments as the model wrote them. */
  arguments: string;
  /** False when the tool was unknown, its arguments invalid, or it threw. */
  ok: boolean;
  /** Characters of the result shown to the model (after the cap). */
  outputChars: number;
  durationMs: number;
}
