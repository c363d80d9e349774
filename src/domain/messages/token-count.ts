import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

/** Tokens of `text` under the o200k_base encoding (contract §7.4); the ranks ship in the package. */
export function tokenCount(text: string): number {
  return text.length === 0 ? 0 : countTokens(text);
}
