// The handlers granted by POST /run, served over HTTP:
//   ALL    /apps/<executionId>/<path>?<query>  -> invokeHandle(executionId, 'fetch', request)
//   DELETE /apps/<executionId>                 -> closeHandles(executionId)
// The handler sees itself mounted at the root: a request to /apps/<id>/items?page=2 reaches it
// as http://<host>/items?page=2.

import { All, Controller, Delete, HttpCode, HttpStatus, Inject, Param, Req, Res, UseFilters } from '@nestjs/common';
import { IsolateExecutor } from '@supolka/codemode-executor';
import type { Request, Response } from 'express';
import { FaultFilter, toWireRequest, writeWireResponse } from './http.js';

@Controller('apps')
// A handler that throws or answers something other than a Response is a bad gateway.
@UseFilters(new FaultFilter(HttpStatus.BAD_GATEWAY))
export class AppsController {
  constructor(@Inject(IsolateExecutor) private readonly executor: IsolateExecutor) {}

  @Delete(':executionId')
  @HttpCode(HttpStatus.NO_CONTENT)
  async close(@Param('executionId') executionId: string): Promise<void> {
    await this.executor.closeHandles(executionId);
  }

  @All(':executionId/{*path}')
  async invoke(@Param('executionId') executionId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const mount = `/apps/${encodeURIComponent(executionId)}`;
    const request = await toWireRequest(req, mount);
    const answer = await this.executor.invokeHandle(executionId, 'fetch', request);
    writeWireResponse(req, res, answer);
  }
}
