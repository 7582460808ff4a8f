from tests.workspaces.support import proj, proj_id, wt_client

__all__ = ["proj", "proj_id", "wt_client"]
