import { Module } from '@nestjs/common';
import { AppsController } from './apps.controller.js';
import { ExecutorModule } from './executor.module.js';
import { RunController } from './run.controller.js';
import { StoreTools } from './store.tools.js';

@Module({
  imports: [ExecutorModule],
  controllers: [RunController, AppsController],
  providers: [StoreTools],
})
export class AppModule {}
