import { Controller, Get, Header } from '@nestjs/common';
import { openApiDocument } from './openapi';

const DOCUMENT = openApiDocument();

/** `GET /openapi.json`: the API description, no token needed. */
@Controller()
export class OpenApiController {
  @Get('openapi.json')
  @Header('Cache-Control', 'no-cache')
  document() {
    return DOCUMENT;
  }
}
