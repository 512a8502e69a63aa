"""Where one HTTP request's faults stop: bounded reading of untrusted JSON bodies, and the
per-request containment every HTTP application of pilothouse mounts.

Nothing here knows about the mesh; REST discovery, the admin app and the admission
webhook all use it, so it imports from no pipeline stage.
"""
