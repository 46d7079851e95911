import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { sendSerialized, type App } from '../../http/types.ts'
import { REFERENCE_DATA_AUTH } from './reference-data.ts'
import { CountryParams, GetCountryResponse, ListCountriesResponse } from './countries.schemas.ts'
import type { CountriesService } from './countries.service.ts'


export function countriesRoutes(countries: CountriesService) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Countries']

    app.get(
      '/core/countries',
      {
        schema: {
          operationId: 'core.list-countries',
          summary: 'List countries',
          description: 'Every ISO 3166-1 country with its currency, its ISO 3166-2 subdivisions and the restrictions this deployment applies.',
          tags,
          headers: ActingRequestHeaders,
          response: { 200: described(ListCountriesResponse, 'Countries.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
      },
      // Pre-serialized at start (the tests check it against the schema like any response).
      async (_request, reply) => sendSerialized(reply, countries.listBody()),
    )

    app.get(
      '/core/countries/:country',
      {
        schema: {
          operationId: 'core.get-country',
          summary: 'Get country',
          description: 'A country by its ISO 3166-1 alpha-2 code, in upper case.',
          tags,
          params: CountryParams,
          headers: ActingRequestHeaders,
          response: { 200: described(GetCountryResponse, 'Country.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
      },
      async (request, reply) => sendSerialized(reply, countries.getBody(request.params.country)),
    )
  }
}
