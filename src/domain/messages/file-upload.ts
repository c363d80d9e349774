import type { JsonObject, MessageRecord } from '../../storage/store.js';
import type { DomainContext } from '../context.js';
import { tooLarge, type DomainError } from '../errors.js';
import { extractFileText, type UploadedFile } from './file-text.js';
import { createMessages } from './messages.js';
import { splitText } from './split-text.js';

/** Largest file an upload may carry (`MAX_FILE_SIZE`, contract §7.4). */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;

/** Most characters in one message (`MAX_MESSAGE_SIZE`, contract §7.4): also the size of each piece of an upload. */
export const MAX_MESSAGE_CHARS = 25_000;

export interface FileUpload {
  peerId: string;
  file: UploadedFile;
  metadata?: JsonObject;
  createdAt?: Date;
  /** The form's `configuration`: each message's own, exactly as message create takes it. */
  configuration?: JsonObject | null;
}

/** The 413 for a file of `size` bytes (also used when the request body itself is too big). */
export function fileTooLarge(size: number): DomainError {
  return tooLarge(`File size (${size} bytes) exceeds maximum allowed size (${MAX_FILE_BYTES} bytes)`);
}

/**
 * Turns an uploaded file into messages (contract §7.4): its text is split into pieces of at most
 * 25,000 characters and each piece becomes one message from `peerId` with the same metadata and
 * time and the same configuration (the upload's `configuration` reaches the deriver as a JSON
 * message's does). Checks run before anything is written (size 413, type 415, unreadable content 422); the
 * messages are then created as one all-or-nothing batch, with the sender created and joined as
 * for any new message.
 */
export async function createMessagesFromFile(
  ctx: DomainContext,
  workspaceId: string,
  sessionId: string,
  upload: FileUpload,
): Promise<MessageRecord[]> {
  if (upload.file.bytes.byteLength > MAX_FILE_BYTES) throw fileTooLarge(upload.file.bytes.byteLength);
  const text = await extractFileText(upload.file);
  const inputs = splitText(text, MAX_MESSAGE_CHARS).map((piece) => ({
    peerId: upload.peerId,
    // spec 1.7: NUL characters are removed from message content (after splitting, as the reference does)
    content: piece.replace(/\u0000/g, ''),
    metadata: upload.metadata,
    createdAt: upload.createdAt,
    configuration: upload.configuration,
  }));
  return createMessages(ctx, workspaceId, sessionId, inputs);
}
