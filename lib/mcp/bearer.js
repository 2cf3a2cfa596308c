// @ts-check
'use strict';
// The bearer token every `codemode-executor mcp --http` request carries. The MCP SDK's
// `requireBearerAuth` (server/auth/middleware/bearerAuth.js) is Express middleware; this is the
// same check in its shape for node:http: a verifier (`verifyAccessToken`, the SDK's
// OAuthTokenVerifier) turns the token into the request's `auth` (AuthInfo, which the SDK's
// transport hands the tools as `authInfo`), and a refusal is 401 with
// `WWW-Authenticate: Bearer error="invalid_token", error_description="..."` and the OAuth error
// body, made by the SDK's InvalidTokenError.

const crypto = require('node:crypto');
const { InvalidTokenError } = require('@modelcontextprotocol/sdk/server/auth/errors.js');

/** @typedef {import('@modelcontextprotocol/sdk/server/auth/types.js').AuthInfo} AuthInfo */
/** The SDK's OAuthTokenVerifier (server/auth/provider.js). @typedef {{ verifyAccessToken(token: string): Promise<AuthInfo> }} TokenVerifier */
/** @typedef {import('node:http').IncomingMessage & { auth?: AuthInfo }} Request */

/** @param {string} text */
const digest = (text) => crypto.createHash('sha256').update(text).digest();

/**
 * A verifier of one shared secret (--token-file's, or the one made at start). Tokens are compared
 * as digests, in constant time.
 * @param {string} secret
 * @returns {TokenVerifier}
 */
function sharedTokenVerifier(secret) {
  const expected = digest(secret);
  return {
    async verifyAccessToken(token) {
      if (!crypto.timingSafeEqual(digest(token), expected)) {
        throw new InvalidTokenError('Unauthorized: the token is not the one of --token-file (or the one printed at start)');
      }
      return { token, clientId: 'token-file', scopes: [] };
    },
  };
}

/**
 * A request passes with `Authorization: Bearer TOKEN` (the scheme in any case) whose token the
 * verifier takes: `next` is called with its `auth` set. Any other is answered 401.
 * @param {{ verifier: TokenVerifier }} options
 * @returns {(req: Request, res: import('node:http').ServerResponse, next: () => Promise<void>) => Promise<void>}
 */
function requireBearer({ verifier }) {
  return async (req, res, next) => {
    try {
      const header = req.headers.authorization;
      if (!header) throw new InvalidTokenError('Unauthorized: send Authorization: Bearer TOKEN with the token of --token-file (or the one printed at start)');
      const space = header.indexOf(' ');
      if (space <= 0 || header.slice(0, space).toLowerCase() !== 'bearer' || space === header.length - 1) {
        throw new InvalidTokenError("Invalid Authorization header format, expected 'Bearer TOKEN'");
      }
      req.auth = await verifier.verifyAccessToken(header.slice(space + 1));
    } catch (e) {
      if (!(e instanceof InvalidTokenError)) throw e;
      // The descriptions hold no `"`: they go into the header's quoted string as they are.
      res.writeHead(401, { 'www-authenticate': `Bearer error="${e.errorCode}", error_description="${e.message}"`, 'content-type': 'application/json' });
      res.end(JSON.stringify(e.toResponseObject()));
      return;
    }
    await next();
  };
}

module.exports = { requireBearer, sharedTokenVerifier };
