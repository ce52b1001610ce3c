"""3WM (ICLR 2026): one probabilistic world model over RGB, flow and camera, with tasks
as inference pathways, at toy scale (a procedurally rendered 2.5-D tabletop).

``world``: the scene generator. ``geometry``: pinhole flow and depth, metrics,
classical baselines. ``tokens``: the patch quantizer and bins. ``model``: the
pointer-content GPT trained in random order. ``pathways``: the tasks. ``records``:
the calibration grid's committed records as a table.
"""

# ruff: noqa: F401 -- the package re-exports its modules' names
from .geometry import (
    abs_rel,
    block_matching_flow,
    cut_and_paste,
    depth_from_disparity,
    depth_from_flow,
    disparity_from_depth,
    flow_from_depth,
    forward_warp,
    patch_mean,
    psnr,
    shift_rows,
    stereo_warp_gain,
)
from .identities import chain_rule_product, check_depth_from_flow
from .model import (
    PointerContentGPT,
    group_orders,
    random_orders,
    raster_orders,
    train,
    train_steps,
)
from .pathways import (
    WorldModel,
    colour_centroid,
    depth_from_prior_flow,
    depth_from_true_flow_tokens,
    fit_world_model,
    layout_prior,
    load_stereo_motorcycle,
    manipulation_condition,
    manipulation_hits,
    patch_depth,
    pathway_depth,
    pathway_depth_via_rgb,
    pathway_manipulate,
    pathway_nvs,
    world_model_steps,
)
from .records import calibration_table, load_records
from .tokens import (
    Bins,
    CameraQuantizer,
    FlowQuantizer,
    Layout,
    PatchQuantizer,
    patchify,
    tokenize,
    unpatchify,
    value_features,
)
from .world import make_tabletop_batch, scene_constants
