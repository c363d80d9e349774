import { scopeTools } from './scopes.js';
import type { ToolSpec } from '../tool.js';
import { conclusionTools, extraPeerTools, peerTools } from './peers.js';
import { memoryTools } from './memory.js';
import { sessionTools } from './sessions.js';
import { systemTools, workspaceTools } from './workspace.js';

/** The reference MCP server's 31 tools, in its order (names and parameters as ../shared/reference/mcp.md M6). */
export const REFERENCE_TOOLS: readonly ToolSpec[] = [...workspaceTools, ...peerTools, ...sessionTools, ...conclusionTools, ...systemTools];

/** Tools over the routes of scopes (tools/scopes.ts), each with the scope rule of its route in api.ts. */
const SCOPE_TOOLS: readonly ToolSpec[] = scopeTools;

/** Every tool, in `tools/list` order: the reference's, then Engram's own (docs/mcp.md). */
export const TOOLS: readonly ToolSpec[] = [...REFERENCE_TOOLS, ...extraPeerTools, ...memoryTools, ...SCOPE_TOOLS];
