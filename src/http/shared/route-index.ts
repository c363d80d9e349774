import type { RouteAccess } from './route.js';

/** A registered route with the access it declares (method, URL pattern as registered, scope). */
export interface DeclaredRoute {
  method: string;
  url: string;
  access: RouteAccess;
}

/**
 * Which methods each registered path answers, so an unmatched request can get the framework
 * answers of the reference (contract §1.1): 405 with `Allow` for a known path and wrong method,
 * 307 between the slash and slash-less forms of a path that exists only in the other form.
 * Consulted only on the not-found path.
 */
export class RouteIndex {
  private readonly routes: { pattern: RegExp; method: string }[] = [];
  private readonly declared: DeclaredRoute[] = [];

  /** `access`: what the route declares about who may call it (the routes of shared/route.ts). */
  add(url: string, methods: string | string[], access?: RouteAccess): void {
    const source = url
      .split('/')
      .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    const pattern = new RegExp(`^${source}$`);
    for (const method of Array.isArray(methods) ? methods : [methods]) {
      this.routes.push({ pattern, method });
      // the HEAD twin the framework adds to a GET route is not a route of its own
      if (access !== undefined && method !== 'HEAD') this.declared.push({ method, url, access });
    }
  }

  /** Every route that declared its access, in registration order (the permission test reads them). */
  declaredRoutes(): readonly DeclaredRoute[] {
    return this.declared;
  }

  methodsFor(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes) if (route.pattern.test(path)) methods.add(route.method);
    return [...methods];
  }

  /**
   * The answer for an unmatched request, or undefined for a plain 404, in the reference's
   * framework's order: a path some route answers with another method is a 405; else a path
   * whose other form (with the trailing slash, or without it) some route answers, with any
   * method, is a 307 to that form (a wrong method there is the 405 the client gets next).
   */
  resolve(method: string, url: string): { status: 405; allow: string } | { status: 307; location: string } | undefined {
    const queryStart = url.indexOf('?');
    const path = queryStart < 0 ? url : url.slice(0, queryStart);
    const methods = this.methodsFor(path).filter((m) => m !== 'HEAD');
    if (methods.length > 0) return { status: 405, allow: methods.join(', ') };
    if (path === '/') return undefined;
    const other = path.endsWith('/') ? path.replace(/\/+$/, '') : `${path}/`;
    if (other !== '' && this.methodsFor(other).length > 0) return { status: 307, location: other + (queryStart < 0 ? '' : url.slice(queryStart)) };
    return undefined;
  }
}
