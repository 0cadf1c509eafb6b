import { Controller, Get, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import type { ProjectionsAdminApp } from '../app/projections-admin';
import { AdminGuard } from './admin.guard';
import { PROJECTIONS_ADMIN_APP } from './tokens';

/** `/v1/admin/projections…`: operator actions on the read models (README "Projections"). */
@Controller('v1/admin/projections')
@UseGuards(AdminGuard)
export class AdminController {
  constructor(@Inject(PROJECTIONS_ADMIN_APP) private readonly projections: ProjectionsAdminApp) {}

  @Get()
  list() {
    return this.projections.list();
  }

  @Get(':name')
  get(@Param('name') name: string) {
    return this.projections.get(name);
  }

  @Post(':name/rebuild')
  @HttpCode(202)
  rebuild(@Param('name') name: string) {
    return this.projections.rebuild(name);
  }
}
