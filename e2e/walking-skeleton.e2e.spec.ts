import { walkingSkeleton } from './walking-skeleton.suite';

walkingSkeleton('walking skeleton (e2e)', { replicas: 1 });
