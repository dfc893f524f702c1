// asl-validator ships no type declarations; this is the part of its API the tests use.
declare module 'asl-validator' {
  interface ValidationError {
    message?: string;
    'Error code'?: string;
    [key: string]: unknown;
  }
  interface ValidationResult {
    isValid: boolean;
    errors: ValidationError[];
    errorsText(separator?: string): string;
  }
  function aslValidator(
    definition: unknown,
    options?: { checkPaths?: boolean; checkArn?: boolean },
  ): ValidationResult;
  export = aslValidator;
}
