import { Controller, Get, Headers, Inject, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { NotFound } from '@handplane/kernel';
import { SECURITY_HEADERS, type Asset } from './console-assets';
import { CONSOLE_ASSETS } from './console.tokens';

/** Serves the web console: `/` is the page, `/console/…` its scripts and styles. */
@Controller()
export class ConsoleController {
  constructor(@Inject(CONSOLE_ASSETS) private readonly assets: ReadonlyMap<string, Asset>) {}

  @Get()
  page(@Headers('if-none-match') etag: string | undefined, @Res() res: Response): void {
    this.send('/index.html', etag, res);
  }

  @Get('console/*path')
  asset(@Req() req: Request, @Headers('if-none-match') etag: string | undefined, @Res() res: Response): void {
    this.send(req.path, etag, res);
  }

  private send(path: string, ifNoneMatch: string | undefined, res: Response): void {
    const asset = this.assets.get(path);
    if (!asset) throw new NotFound('no such console file');
    // no-cache: the browser revalidates (cheap with the ETag), so a new deployment shows at once.
    res.set({ ...SECURITY_HEADERS, 'Cache-Control': 'no-cache', ETag: asset.etag });
    if (ifNoneMatch === asset.etag) {
      res.status(304).end();
      return;
    }
    res.status(200).type(asset.contentType).end(asset.body);
  }
}
