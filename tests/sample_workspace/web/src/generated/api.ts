// This file is generated and ignored by web/src/.gitignore.
export const GENERATED_API_VERSION = "1.0.0";
