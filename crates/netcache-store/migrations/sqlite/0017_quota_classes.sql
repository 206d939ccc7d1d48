-- Nova's quota classes (os-quota-class-sets): a value per (class, resource)
-- an admin set. The `default` class's values stand in for the deployment's
-- defaults (`[quota]`) of every project and user without a limit of its own,
-- as Nova's database driver reads them; a resource without a row has the
-- deployment's default. Any class name may be set; only `default` is applied.
CREATE TABLE quota_classes (
    class_name TEXT NOT NULL,
    resource TEXT NOT NULL,
    hard_limit INTEGER NOT NULL,
    PRIMARY KEY (class_name, resource)
) STRICT;
