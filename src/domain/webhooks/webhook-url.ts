import { BlockList, isIP } from 'node:net';

/*
 * Webhook URL rules (contract §7.6): scheme and host required, http(s) only, and no literal
 * IP address in a private, loopback, link-local, reserved, multicast or unspecified range.
 * Host names are not resolved here; delivery re-checks the resolved address.
 */

// Separate lists: a BlockList also matches IPv4 addresses against IPv6 rules (as ::ffff:a.b.c.d).
const blockedV4 = new BlockList();
const blockedV6 = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blockedV4.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 8],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blockedV6.addSubnet(network, prefix, 'ipv6');
}

export function isBlockedAddress(address: string): boolean {
  const version = isIP(address);
  if (version === 4) return blockedV4.check(address, 'ipv4');
  if (version !== 6) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return blockedV4.check(mapped[1], 'ipv4');
  return blockedV6.check(address, 'ipv6');
}

/** Returns the contract's error text for a bad URL, or undefined when it is acceptable. */
export function webhookUrlProblem(url: string, checkPrivate: boolean): string | undefined {
  const match = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)/.exec(url);
  if (match === null || match[2] === '') return 'Invalid URL format';
  const scheme = match[1].toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') return 'Only HTTP and HTTPS URLs are allowed';
  const hostPort = match[2].slice(match[2].lastIndexOf('@') + 1);
  const host = hostPort.startsWith('[') ? hostPort.slice(1, hostPort.indexOf(']')) : hostPort.replace(/:\d*$/, '');
  if (host === '') return 'Invalid URL format';
  if (checkPrivate && isBlockedAddress(host)) return 'Private/internal IP addresses are not allowed';
  return undefined;
}
