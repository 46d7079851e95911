import Type from 'typebox'
import type { Environment } from '../../config.ts'
import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, sendSerialized, type App } from '../../http/types.ts'
import { REFERENCE_DATA_AUTH } from './reference-data.ts'
import {
  AssetParams,
  GetAssetResponse,
  GetManyAssetsBody,
  GetManyAssetsResponse,
  ListAssetsQuery,
  ListAssetsResponse,
} from './assets.schemas.ts'
import type { AssetsService } from './assets.service.ts'


export function assetsRoutes(assets: AssetsService, environment: Environment) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Assets']

    app.get(
      '/core/assets',
      {
        schema: {
          operationId: 'core.list-assets',
          summary: 'List assets',
          description: 'Fiat currencies and crypto assets. Acting for a user, features are those the user may use now.',
          tags,
          querystring: ListAssetsQuery,
          headers: ActingRequestHeaders,
          response: { 200: described(ListAssetsResponse, 'Assets.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
      },
      async (request) => ({ assets: await assets.list(principalOf(request), { types: request.query.type?.split(','), sort: request.query.sort }) }),
    )

    app.post(
      '/core/assets/_mget',
      {
        schema: {
          operationId: 'core.get-many-assets',
          summary: 'Get many assets',
          description: 'Assets by code, at most 100; codes not in the catalogue are left out of the answer.',
          tags,
          headers: ActingRequestHeaders,
          body: GetManyAssetsBody,
          response: { 200: described(GetManyAssetsResponse, 'Assets by code.'), ...errorResponses(400, 401, 403, 404, 413, 415, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
      },
      async (request) => ({ assets: await assets.getMany(principalOf(request), request.body.codes) }),
    )

    app.get(
      '/core/assets/:asset',
      {
        schema: {
          operationId: 'core.get-asset',
          summary: 'Get asset',
          tags,
          params: AssetParams,
          headers: ActingRequestHeaders,
          response: { 200: described(GetAssetResponse, 'Asset.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
      },
      async (request, reply) => sendSerialized(reply, await assets.getBody(principalOf(request), request.params.asset)),
    )

    // Logos are public images (an <img> sends no token); they are not part of the API document.
    app.get(
      '/core/assets/:asset/logo.svg',
      { schema: { hide: true, params: AssetParams } },
      async (request, reply) => {
        const svg = assets.logo(request.params.asset)
        return reply.header('content-type', 'image/svg+xml').header('cache-control', 'public, max-age=86400').send(svg)
      },
    )

    // The helper does not exist in production: the route is not registered there, so it answers 404.
    if (environment === 'sandbox') {
      app.put(
        '/core/assets/test-helpers/skip-assets-cooldowns',
        {
          schema: {
            operationId: 'core.skip-assets-cooldowns',
            summary: 'Skip assets cooldowns',
            description: 'Sandbox only: ends the cooldowns running for the user the request acts for.',
            tags,
            headers: ActingRequestHeaders,
            response: { 204: Type.Null({ description: 'Cooldowns skipped.' }), ...errorResponses(400, 401, 403, 404, 429) },
          },
          config: { auth: { scopes: ['core.assets:use-test-helpers'], subjects: ['user:individual', 'user:business'] } },
        },
        async (request, reply) => {
          await assets.skipCooldowns(principalOf(request))
          return reply.status(204).send(null)
        },
      )
    }
  }
}
